#include "packet/queue_counters.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace vnet::packet {
namespace {

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

// The one list of reasons drives the stats JSON keys and the metrics'
// `reason` label: each needs a name of its own.
TEST(DropReasonNames, every_reason_has_a_distinct_name) {
    std::set<std::string_view> names;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
        const std::string_view name = to_string(static_cast<DropReason>(i));
        EXPECT_NE(name, "unknown") << "reason " << i;
        EXPECT_TRUE(names.insert(name).second) << name << " twice";
    }
    EXPECT_EQ(to_string(DropReason::device_gone), "device_gone");
}

}  // namespace
}  // namespace vnet::packet
