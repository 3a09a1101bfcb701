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
    pacer.published(1'000'000, 1);
    EXPECT_EQ(pacer.hold_until(1'000'000 + P::kSilenceNs, 1, kBudget), 0u);
    EXPECT_EQ(pacer.hold_until(1'000'000 + 10 * P::kSilenceNs, 1, kBudget), 0u);
}

TEST(RxStreamPacer, holds_a_stream_until_the_time_budget_from_the_first_held_burst) {
    P pacer;
    pacer.published(1'000'000, 1);
    const uint64_t first = 1'000'000 + 1000;
    EXPECT_EQ(pacer.hold_until(first, 3, kBudget), first + P::kBudgetNs);
    // Later bursts keep the first one's deadline, however close together.
    EXPECT_EQ(pacer.hold_until(first + 5000, 9, kBudget), first + P::kBudgetNs);
    // Once it has passed, the next flush publishes.
    EXPECT_EQ(pacer.hold_until(first + P::kBudgetNs, 12, kBudget), 0u);
}

TEST(RxStreamPacer, publishes_a_stream_once_the_frame_budget_is_pending) {
    P pacer;
    pacer.published(1'000'000, 1);
    EXPECT_NE(pacer.hold_until(1'001'000, kBudget - 1, kBudget), 0u);
    EXPECT_EQ(pacer.hold_until(1'002'000, kBudget, kBudget), 0u);
}

TEST(RxStreamPacer, a_publish_starts_the_next_hold_afresh) {
    P pacer;
    pacer.published(1'000'000, 1);
    EXPECT_EQ(pacer.hold_until(1'001'000, 2, kBudget), 1'001'000 + P::kBudgetNs);
    pacer.published(1'021'000, 1);
    EXPECT_EQ(pacer.hold_until(1'025'000, 2, kBudget), 1'025'000 + P::kBudgetNs);
}

// Silence is measured between bursts, held ones included: a hold that
// keeps getting bursts lasts its budget, however long after the last
// publish.
TEST(RxStreamPacer, held_bursts_keep_the_stream_from_going_quiet) {
    P pacer;
    pacer.published(1'000'000, 1);
    uint64_t now = 1'000'000;
    const uint64_t first = now + 10'000;
    for (now = first; now < first + P::kBudgetNs; now += 50'000) {
        EXPECT_EQ(pacer.hold_until(now, 4, kBudget), first + P::kBudgetNs) << now - first;
    }
    EXPECT_EQ(pacer.hold_until(now, 4, kBudget), 0u);  // the budget, not silence
}

// Once a stream's worth of frames has gone out, a pause longer than the
// short silence (the guest was busy with them, its sender stopped) is
// still inside the stream; a longer one, or a small start, is quiet.
TEST(RxStreamPacer, a_running_stream_is_quiet_only_after_the_long_silence) {
    P pacer;
    pacer.published(1'000'000, P::kStreamFrames - 1);
    EXPECT_EQ(pacer.hold_until(1'000'000 + P::kSilenceNs, 1, kBudget), 0u);  // quiet
    pacer.published(1'000'000 + P::kSilenceNs, 1);
    pacer.published(1'010'000 + P::kSilenceNs, P::kStreamFrames);
    const uint64_t later = 1'010'000 + 2 * P::kSilenceNs + 100'000;
    EXPECT_EQ(pacer.hold_until(later, 4, kBudget), later + P::kBudgetNs);
    pacer.published(later + 1000, 2);  // small publishes do not end a stream
    EXPECT_NE(pacer.hold_until(later + 1000 + P::kSilenceNs, 1, kBudget), 0u);
    const uint64_t quiet = later + 1000 + P::kSilenceNs + P::kStreamSilenceNs;
    EXPECT_EQ(pacer.hold_until(quiet, 1, kBudget), 0u);
    // Quiet again: the stream starts over, with the short silence.
    pacer.published(quiet, 1);
    EXPECT_EQ(pacer.hold_until(quiet + P::kSilenceNs, 1, kBudget), 0u);
}

TEST(RxStreamPacer, reset_forgets_the_stream) {
    P pacer;
    pacer.published(1'000'000, 1);
    pacer.reset();
    EXPECT_EQ(pacer.hold_until(1'000'100, 1, kBudget), 0u);
}

}  // namespace
}  // namespace vnet::virtio
