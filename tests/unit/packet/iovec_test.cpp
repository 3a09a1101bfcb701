#include "packet/iovec.hpp"

#include <gtest/gtest.h>

#include <array>

namespace vnet::packet {
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

TEST(IovecGatherAt, gathers_a_range_from_an_offset_across_pieces_skipping_empty_ones) {
    const uint8_t a[] = {1, 2, 3}, c[] = {4, 5, 6, 7};
    const std::array<iovec, 3> src{iovec{const_cast<uint8_t*>(a), 3}, iovec{nullptr, 0},
                                   iovec{const_cast<uint8_t*>(c), 4}};
    uint8_t out[8]{};
    EXPECT_EQ(gather_at(src, 2, out, 3), 3u);
    EXPECT_EQ(out[0], 3);
    EXPECT_EQ(out[1], 4);
    EXPECT_EQ(out[2], 5);
    EXPECT_EQ(gather_at(src, 3, out, 8), 4u) << "stops where the source ends";
    EXPECT_EQ(out[0], 4);
    EXPECT_EQ(gather_at(src, 7, out, 1), 0u) << "an offset at the end copies nothing";
    EXPECT_EQ(gather_at(src, 9, out, 1), 0u) << "nor one past it";
}

// A switched frame's shape, copied inline: from inside the first of two
// pieces to inside (or the end of) the second; the edges around it take
// the general walk and give the same answers.
TEST(IovecGatherAt, gathers_a_range_from_the_first_of_two_pieces_into_the_second) {
    const uint8_t a[] = {1, 2, 3}, b[] = {4, 5, 6, 7};
    const std::array<iovec, 2> src{iovec{const_cast<uint8_t*>(a), 3},
                                   iovec{const_cast<uint8_t*>(b), 4}};
    uint8_t out[8]{};
    EXPECT_EQ(gather_at(src, 1, out, 6), 6u) << "to the end of the second piece";
    EXPECT_EQ(out[0], 2);
    EXPECT_EQ(out[2], 4);
    EXPECT_EQ(out[5], 7);
    EXPECT_EQ(gather_at(src, 2, out, 3), 3u) << "to inside the second piece";
    EXPECT_EQ(out[0], 3);
    EXPECT_EQ(out[2], 5);
    EXPECT_EQ(gather_at(src, 1, out, 7), 6u) << "past the end: what there is";
    EXPECT_EQ(gather_at(src, 1, out, 2), 2u) << "inside the first piece";
    EXPECT_EQ(out[1], 3);
    EXPECT_EQ(gather_at(src, 3, out, 2), 2u) << "starting at the second piece";
    EXPECT_EQ(out[0], 4);
    const std::array<iovec, 2> empty_first{iovec{nullptr, 0}, iovec{const_cast<uint8_t*>(b), 4}};
    EXPECT_EQ(gather_at(empty_first, 0, out, 4), 4u);
    EXPECT_EQ(out[3], 7);
}

TEST(IovecTotal, adds_every_piece_including_empty_ones) {
    uint8_t a[3], b[9];
    const std::array<iovec, 3> src{iovec{a, 3}, iovec{nullptr, 0}, iovec{b, 9}};
    EXPECT_EQ(total_length(src), 12u);
    EXPECT_EQ(total_length({}), 0u);
}

TEST(IovecScatter, writes_a_field_split_over_tiny_buffers_at_an_offset) {
    uint8_t a[3]{}, b[1]{}, c[4]{};
    const std::array<iovec, 4> dst{iovec{a, 3}, iovec{nullptr, 0}, iovec{b, 1}, iovec{c, 4}};
    const uint8_t field[] = {0xaa, 0xbb, 0xcc};
    EXPECT_EQ(scatter_at(dst, 2, field, 3), 3u);
    EXPECT_EQ(a[2], 0xaa);
    EXPECT_EQ(b[0], 0xbb);
    EXPECT_EQ(c[0], 0xcc);
    EXPECT_EQ(c[1], 0);
}

TEST(IovecScatter, stops_at_the_end_of_the_destination) {
    uint8_t a[4]{};
    const std::array<iovec, 1> dst{iovec{a, 4}};
    const uint8_t field[] = {1, 2, 3};
    EXPECT_EQ(scatter_at(dst, 3, field, 3), 1u);
    EXPECT_EQ(a[3], 1);
    EXPECT_EQ(scatter_at(dst, 9, field, 3), 0u);
}

TEST(IovecCopy, copies_between_differently_split_buffers) {
    uint8_t s1[] = {1, 2, 3}, s2[] = {4, 5, 6, 7};
    uint8_t d1[2]{}, d2[5]{}, d3[4]{};
    const std::array<iovec, 3> src{iovec{s1, 3}, iovec{nullptr, 0}, iovec{s2, 4}};
    const std::array<iovec, 3> dst{iovec{d1, 2}, iovec{d2, 5}, iovec{d3, 4}};
    EXPECT_EQ(copy_iovecs(dst, src, 6), 6u);
    EXPECT_EQ(d1[0], 1);
    EXPECT_EQ(d1[1], 2);
    EXPECT_EQ(d2[0], 3);
    EXPECT_EQ(d2[3], 6);
    EXPECT_EQ(d2[4], 0);  // byte 7 was not asked for
}

TEST(IovecCopy, stops_where_the_shorter_side_ends) {
    uint8_t s[] = {1, 2, 3, 4};
    uint8_t d[2]{};
    const std::array<iovec, 1> src{iovec{s, 4}};
    const std::array<iovec, 1> dst{iovec{d, 2}};
    EXPECT_EQ(copy_iovecs(dst, src, 4), 2u);
    EXPECT_EQ(d[1], 2);
    EXPECT_EQ(copy_iovecs(src, dst, 4), 2u);
}

}  // namespace
}  // namespace vnet::packet
