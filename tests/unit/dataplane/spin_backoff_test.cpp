// The adaptive spin's pause schedule between empty polls: it doubles up to
// its bound while traffic streams, starts over when a poll finds work, and
// stays short for sparse traffic, where a late poll is added latency; and
// the spin's yields.
#include <gtest/gtest.h>

#include <vector>

#include "dataplane/spin_backoff.hpp"

namespace vnet::dataplane {
namespace {

std::vector<uint32_t> schedule(SpinBackoff& backoff, bool streaming, int polls) {
    std::vector<uint32_t> out;
    for (int i = 0; i < polls; ++i) {
        out.push_back(backoff.next_pauses(streaming));
    }
    return out;
}

TEST(SpinBackoff, doubles_from_the_minimum_to_the_bound_while_streaming) {
    SpinBackoff backoff;
    EXPECT_EQ(schedule(backoff, true, 10),
              (std::vector<uint32_t>{2, 4, 8, 16, 32, 64, 128, 256, 256, 256}));
}

TEST(SpinBackoff, starts_over_when_a_poll_finds_work) {
    SpinBackoff backoff;
    schedule(backoff, true, 6);
    backoff.on_work();
    EXPECT_EQ(schedule(backoff, true, 3), (std::vector<uint32_t>{2, 4, 8}));
}

TEST(SpinBackoff, stays_short_for_sparse_traffic) {
    SpinBackoff backoff;
    EXPECT_EQ(schedule(backoff, false, 4),
              (std::vector<uint32_t>{SpinBackoff::kMinPauses, SpinBackoff::kMinPauses,
                                     SpinBackoff::kMinPauses, SpinBackoff::kMinPauses}));
}

TEST(SpinBackoff, a_stream_that_thins_out_drops_back_to_the_short_pause_at_once) {
    SpinBackoff backoff;
    schedule(backoff, true, 8);  // at the bound
    EXPECT_EQ(backoff.next_pauses(false), SpinBackoff::kMinPauses);
    // And a stream that resumes grows again from the minimum.
    EXPECT_EQ(backoff.next_pauses(true), SpinBackoff::kMinPauses);
    EXPECT_EQ(backoff.next_pauses(true), 2 * SpinBackoff::kMinPauses);
}

TEST(SpinBackoff, a_stream_is_a_learned_gap_under_the_threshold) {
    EXPECT_TRUE(SpinBackoff::streaming(0));
    EXPECT_TRUE(SpinBackoff::streaming(SpinBackoff::kStreamingGapNs - 1));
    EXPECT_FALSE(SpinBackoff::streaming(SpinBackoff::kStreamingGapNs));
    // The adaptive spin's starting average (a 200 us ceiling / 4) is not a
    // stream: a worker answers fast until it has seen the traffic.
    EXPECT_FALSE(SpinBackoff::streaming(50'000));
}

// The spin gives its CPU away at its first empty poll after work (the task
// a burst woke runs at once), then once per interval, whatever the polls
// in between.
TEST(SpinBackoff, yields_at_the_first_empty_poll_then_once_an_interval) {
    SpinBackoff backoff;
    constexpr uint64_t kInterval = SpinBackoff::kYieldIntervalNs;
    const uint64_t start = 5'000'000;
    EXPECT_TRUE(backoff.yield_due(start, false));
    EXPECT_FALSE(backoff.yield_due(start + 1, false));
    EXPECT_FALSE(backoff.yield_due(start + kInterval - 1, false));
    EXPECT_TRUE(backoff.yield_due(start + kInterval, false));
    EXPECT_FALSE(backoff.yield_due(start + kInterval + kInterval / 2, false));
    EXPECT_TRUE(backoff.yield_due(start + 3 * kInterval, false));
}

TEST(SpinBackoff, work_makes_the_next_empty_poll_yield_at_once) {
    SpinBackoff backoff;
    const uint64_t start = 1'000;  // a clock near zero is a clock too
    EXPECT_TRUE(backoff.yield_due(start, false));
    backoff.on_work();
    EXPECT_TRUE(backoff.yield_due(start + 1, false));
    EXPECT_FALSE(backoff.yield_due(start + 2, false));
}

// While traffic streams the next burst is microseconds away: no yield per
// burst, only once an interval of spinning has passed without work.
TEST(SpinBackoff, a_stream_yields_only_after_an_interval_without_work) {
    SpinBackoff backoff;
    constexpr uint64_t kInterval = SpinBackoff::kYieldIntervalNs;
    const uint64_t start = 7'000'000;
    EXPECT_FALSE(backoff.yield_due(start, true));
    EXPECT_FALSE(backoff.yield_due(start + kInterval - 1, true));
    backoff.on_work();  // the next burst came in time: the count starts over
    EXPECT_FALSE(backoff.yield_due(start + kInterval, true));
    EXPECT_FALSE(backoff.yield_due(start + 2 * kInterval - 1, true));
    EXPECT_TRUE(backoff.yield_due(start + 2 * kInterval, true));
}

}  // namespace
}  // namespace vnet::dataplane
