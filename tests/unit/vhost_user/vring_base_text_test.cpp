// How a vring base reads in the log: a split ring's avail index, or a packed
// ring's two positions, each with its wrap counter.
#include "vhost_user/vring_base_text.hpp"

#include <gtest/gtest.h>

namespace vnet::vhost_user {
namespace {

// Each format as a device that negotiated it would pick it.
const virtio::RingModel kSplit = virtio::ring_model(virtio::FeatureSet{});
const virtio::RingModel kPacked =
    virtio::ring_model(virtio::FeatureSet{virtio::Feature::ring_packed});

TEST(DescribeVringBase, a_split_base_is_the_next_avail_index) {
    EXPECT_EQ(describe_vring_base(kSplit, 7), "avail index 7");
    EXPECT_EQ(describe_vring_base(kSplit, 65535), "avail index 65535");
}

TEST(DescribeVringBase, a_packed_base_gives_each_index_with_its_wrap_counter) {
    EXPECT_EQ(describe_vring_base(kPacked, 0x80008000u),
              "avail index 0 wrap 1, used index 0 wrap 1");
    EXPECT_EQ(describe_vring_base(kPacked, 2147516416u),  // the line that prompted it
              "avail index 0 wrap 1, used index 0 wrap 1");
    EXPECT_EQ(describe_vring_base(kPacked, 0x00058003u),
              "avail index 3 wrap 1, used index 5 wrap 0");
    EXPECT_EQ(describe_vring_base(kPacked, 0x00008003u),
              "avail index 3 wrap 1, used index 3 wrap 1")
        << "a used half of 0 is read as SET_VRING_BASE reads it: used = avail";
    EXPECT_EQ(describe_vring_base(kPacked, 0x7fff7fffu),
              "avail index 32767 wrap 0, used index 32767 wrap 0");
}

}  // namespace
}  // namespace vnet::vhost_user
