#include "ports/packet_burst.hpp"

#include <gtest/gtest.h>

#include "ports/queue_counters.hpp"

namespace vnet::ports {
namespace {

TEST(PacketBurst, pop_front_keeps_the_rest_in_order_with_their_iovecs) {
    static PacketBurst burst;
    burst.clear();
    uint8_t a[1], b[2], c[3];
    uint8_t* bufs[] = {a, b, c};
    for (uint32_t i = 0; i < 3; ++i) {
        auto free = burst.free_iovecs();
        free[0] = iovec{bufs[i], i + 1};
        free[1] = iovec{bufs[i], i + 1};
        burst.push(2, 2 * (i + 1), 100 + i);
    }
    burst.pop_front(1);
    ASSERT_EQ(burst.count, 2);
    EXPECT_EQ(burst.iovecs_used, 4);
    EXPECT_EQ(burst.packets[0].token, 101u);
    EXPECT_EQ(burst.packet_iovecs(0)[0].iov_base, b);
    EXPECT_EQ(burst.packet_iovecs(1)[1].iov_base, c);
    EXPECT_EQ(burst.packet_iovecs(1)[1].iov_len, 3u);
    burst.pop_front(5);
    EXPECT_EQ(burst.count, 0);
    EXPECT_EQ(burst.iovecs_used, 0);
}

TEST(QueueCounters, histogram_buckets_are_powers_of_two) {
    EXPECT_EQ(QueueCounters::histogram_bucket(1), 0u);
    EXPECT_EQ(QueueCounters::histogram_bucket(3), 1u);
    EXPECT_EQ(QueueCounters::histogram_bucket(4), 2u);
    EXPECT_EQ(QueueCounters::histogram_bucket(63), 5u);
    EXPECT_EQ(QueueCounters::histogram_bucket(64), 6u);
    EXPECT_EQ(QueueCounters::histogram_bucket(256), 6u);
}

TEST(QueueCounters, counts_bursts_and_named_drops) {
    QueueCounters c;
    c.count_burst(64, 64 * 60);
    c.count_burst(0, 0);
    c.count_drop(DropReason::too_many_segments, 2);
    EXPECT_EQ(c.packets.get(), 64u);
    EXPECT_EQ(c.bursts.get(), 1u);
    EXPECT_EQ(c.burst_sizes[6].get(), 1u);
    EXPECT_EQ(c.total_drops(), 2u);
    EXPECT_EQ(to_string(DropReason::too_many_segments), "too_many_segments");
    c.reset();
    EXPECT_EQ(c.total_drops(), 0u);
}

}  // namespace
}  // namespace vnet::ports
