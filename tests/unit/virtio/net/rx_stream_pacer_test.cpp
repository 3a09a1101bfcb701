// RxStreamPacer: a burst after silence goes out at once, a stream's bursts
// are held until the frame or time budget, on a caller's clock.
#include "virtio/net/rx_stream_pacer.hpp"

#include <gtest/gtest.h>

namespace vnet::virtio {
namespace {

using P = RxStreamPacer;
constexpr uint16_t kBudget = 192;  // three quarters of a 256-entry ring

TEST(RxStreamPacer, publishes_the_first_burst_at_once) {
    P pacer;
    EXPECT_EQ(pacer.hold_until(1'000'000, 1, kBudget), 0u);
}

TEST(RxStreamPacer, publishes_a_burst_after_silence_at_once) {
    P pacer;
    pacer.published(1'000'000);
    EXPECT_EQ(pacer.hold_until(1'000'000 + P::kSilenceNs, 1, kBudget), 0u);
    EXPECT_EQ(pacer.hold_until(1'000'000 + 10 * P::kSilenceNs, 1, kBudget), 0u);
}

TEST(RxStreamPacer, holds_a_stream_until_the_time_budget_from_the_first_held_burst) {
    P pacer;
    pacer.published(1'000'000);
    const uint64_t first = 1'000'000 + 1000;
    EXPECT_EQ(pacer.hold_until(first, 3, kBudget), first + P::kBudgetNs);
    // Later bursts keep the first one's deadline, however close together.
    EXPECT_EQ(pacer.hold_until(first + 5000, 9, kBudget), first + P::kBudgetNs);
    // Once it has passed, the next flush publishes.
    EXPECT_EQ(pacer.hold_until(first + P::kBudgetNs, 12, kBudget), 0u);
}

TEST(RxStreamPacer, publishes_a_stream_once_the_frame_budget_is_pending) {
    P pacer;
    pacer.published(1'000'000);
    EXPECT_NE(pacer.hold_until(1'001'000, kBudget - 1, kBudget), 0u);
    EXPECT_EQ(pacer.hold_until(1'002'000, kBudget, kBudget), 0u);
}

TEST(RxStreamPacer, a_publish_starts_the_next_hold_afresh) {
    P pacer;
    pacer.published(1'000'000);
    EXPECT_EQ(pacer.hold_until(1'001'000, 2, kBudget), 1'001'000 + P::kBudgetNs);
    pacer.published(1'021'000);
    EXPECT_EQ(pacer.hold_until(1'025'000, 2, kBudget), 1'025'000 + P::kBudgetNs);
}

TEST(RxStreamPacer, reset_forgets_the_stream) {
    P pacer;
    pacer.published(1'000'000);
    pacer.reset();
    EXPECT_EQ(pacer.hold_until(1'000'100, 1, kBudget), 0u);
}

}  // namespace
}  // namespace vnet::virtio
