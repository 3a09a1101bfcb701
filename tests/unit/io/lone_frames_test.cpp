#include "io/lone_frames.hpp"

#include <gtest/gtest.h>

namespace vnet::io {
namespace {

TEST(LoneFrames, batches_until_a_round_finds_one_frame_and_then_nothing) {
    LoneFrames lone;
    EXPECT_FALSE(lone.stop_after_first(true));
    lone.round_ended(3, true);  // a burst of three
    EXPECT_FALSE(lone.stop_after_first(true));
    lone.round_ended(1, false);  // one, and the round stopped for another reason
    EXPECT_FALSE(lone.lone());
    EXPECT_FALSE(lone.stop_after_first(true));
    lone.round_ended(1, true);
    EXPECT_TRUE(lone.lone());
}

TEST(LoneFrames, a_lone_source_has_its_first_frame_handed_over_until_frames_queue_behind) {
    LoneFrames lone;
    lone.stop_after_first(true);
    lone.round_ended(1, true);
    EXPECT_TRUE(lone.stop_after_first(true));    // handed over at once
    EXPECT_FALSE(lone.stop_after_first(false));  // nothing behind it: still lone
    lone.round_ended(0, true);
    EXPECT_TRUE(lone.lone());
    EXPECT_TRUE(lone.stop_after_first(true));
    // The round after finds a frame at once: it was queued behind.
    EXPECT_FALSE(lone.stop_after_first(true));
    EXPECT_FALSE(lone.lone());
    lone.round_ended(12, true);
    EXPECT_FALSE(lone.stop_after_first(true));
}

TEST(LoneFrames, empty_rounds_change_nothing) {
    LoneFrames lone;
    lone.round_ended(0, true);
    EXPECT_FALSE(lone.lone());
    lone.round_ended(1, true);
    for (int i = 0; i < 3; ++i) {
        EXPECT_FALSE(lone.stop_after_first(false));
        lone.round_ended(0, true);
    }
    EXPECT_TRUE(lone.stop_after_first(true));
}

}  // namespace
}  // namespace vnet::io
