#include "gro/iovec_slice.hpp"

#include <gtest/gtest.h>

#include <array>

namespace vnet::gro {
namespace {

TEST(IovecSlice, slices_a_range_across_pieces_skipping_empty_ones) {
    uint8_t a[5], b[1], c[7];
    const std::array<iovec, 4> src{iovec{a, 5}, iovec{b, 0}, iovec{b, 1}, iovec{c, 7}};
    std::array<iovec, 4> dst{};
    ASSERT_EQ(slice_iovecs(src, 3, 5, dst), 3);
    EXPECT_EQ(dst[0].iov_base, a + 3);
    EXPECT_EQ(dst[0].iov_len, 2u);
    EXPECT_EQ(dst[1].iov_base, b);
    EXPECT_EQ(dst[1].iov_len, 1u);
    EXPECT_EQ(dst[2].iov_base, c);
    EXPECT_EQ(dst[2].iov_len, 2u);
}

TEST(IovecSlice, a_range_to_the_end_of_the_last_piece) {
    uint8_t a[4], c[3];
    const std::array<iovec, 2> src{iovec{a, 4}, iovec{c, 3}};
    std::array<iovec, 2> dst{};
    ASSERT_EQ(slice_iovecs(src, 4, 3, dst), 1);
    EXPECT_EQ(dst[0].iov_base, c);
    EXPECT_EQ(dst[0].iov_len, 3u);
}

TEST(IovecSlice, fails_when_the_source_is_shorter_than_the_range) {
    uint8_t a[4];
    const std::array<iovec, 1> src{iovec{a, 4}};
    std::array<iovec, 2> dst{};
    EXPECT_EQ(slice_iovecs(src, 2, 3, dst), -1);
}

TEST(IovecSlice, fails_when_the_destination_has_no_room) {
    uint8_t a[4], b[4];
    const std::array<iovec, 2> src{iovec{a, 4}, iovec{b, 4}};
    std::array<iovec, 1> dst{};
    EXPECT_EQ(slice_iovecs(src, 0, 8, dst), -1);
}

TEST(IovecSlice, gathers_a_prefix_split_anywhere) {
    const uint8_t a[] = {1, 2}, c[] = {3, 4, 5};
    const std::array<iovec, 3> src{iovec{const_cast<uint8_t*>(a), 2}, iovec{nullptr, 0},
                                   iovec{const_cast<uint8_t*>(c), 3}};
    uint8_t out[8]{};
    EXPECT_EQ(gather_prefix(src, out, 4), 4u);
    EXPECT_EQ(out[3], 4);
    EXPECT_EQ(gather_prefix(src, out, 8), 5u);
}

}  // namespace
}  // namespace vnet::gro
