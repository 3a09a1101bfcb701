// "did you mean": near misses get the nearest word, far ones get nothing.
#include "common/did_you_mean.hpp"

#include <gtest/gtest.h>

namespace vnet {
namespace {

TEST(EditDistance, counts_insertions_deletions_substitutions_and_swaps) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("port", "port"), 0u);
    EXPECT_EQ(edit_distance("prot", "port"), 1u);  // a swap of neighbours is one edit
    EXPECT_EQ(edit_distance("ab", "ba"), 1u);
    EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // no edit twice over the same letters
    EXPECT_EQ(edit_distance("lst", "list"), 1u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(edit_distance("abc", ""), 3u);
}

TEST(DidYouMean, names_the_nearest_candidate_within_a_third_of_the_word) {
    const std::vector<std::string_view> keys{"tx_batch", "rx_batch", "queue_pairs", "socket_path"};
    EXPECT_EQ(did_you_mean("tx_bach", keys), " (did you mean 'tx_batch'?)");
    EXPECT_EQ(did_you_mean("sockt_path", keys), " (did you mean 'socket_path'?)");
    EXPECT_EQ(did_you_mean("queue_pair", keys), " (did you mean 'queue_pairs'?)");
    // Equally near: the earlier one.
    EXPECT_EQ(did_you_mean("x_batch", keys), " (did you mean 'tx_batch'?)");
    // Too far to be a typo, or nothing to offer.
    EXPECT_EQ(did_you_mean("mtu", keys), "");
    EXPECT_EQ(did_you_mean("batch", keys), "");
    EXPECT_EQ(did_you_mean("tx_batch", {}), "");
}

TEST(DidYouMean, short_words_allow_one_edit_long_ones_three) {
    EXPECT_EQ(closest_word("lst", {"list", "add"}), std::optional<std::string_view>("list"));
    EXPECT_EQ(closest_word("ls", {"list"}), std::nullopt);  // two edits for two letters
    EXPECT_EQ(closest_word("destinaton_hold_us", {"destination_hold_us"}),
              std::optional<std::string_view>("destination_hold_us"));
    EXPECT_EQ(closest_word("xxxxxxxxxxxxxxxxxxxx", {"xxxxxxxxxxxxxxxxyyyy"}), std::nullopt);
}

}  // namespace
}  // namespace vnet
