// The adaptive worker mode's decision, with the clock driven by the test:
// spin while the learned gap says a packet is likely, sleep past it or past
// the ceiling, learn the gaps spinning could catch, and stop spinning for
// traffic whose gaps it never could.
#include <gtest/gtest.h>

#include "dataplane/adaptive_spin.hpp"

namespace vnet::dataplane {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kCeiling = 200 * kUs;

// One idle gap of `gap` ns that starts at `start` and ends in work.
void idle_gap(AdaptiveSpin& spin, uint64_t start, uint64_t gap) {
    spin.keep_spinning(start);
    spin.on_work(start + gap);
}

TEST(AdaptiveSpin, spins_the_whole_ceiling_before_it_saw_a_gap) {
    AdaptiveSpin spin(kCeiling);
    EXPECT_EQ(spin.spin_budget_ns(), kCeiling);
    EXPECT_TRUE(spin.keep_spinning(1000));
    EXPECT_TRUE(spin.keep_spinning(1000 + kCeiling - 1));
    EXPECT_FALSE(spin.keep_spinning(1000 + kCeiling));
}

TEST(AdaptiveSpin, sleeps_at_once_when_a_wakeup_finds_nothing) {
    AdaptiveSpin spin(kCeiling);
    EXPECT_TRUE(spin.keep_spinning(1000));
    EXPECT_FALSE(spin.keep_spinning(1000 + kCeiling));
    // Woken by the 100 ms epoll timeout, no packet: no new spin.
    EXPECT_FALSE(spin.keep_spinning(1000 + kCeiling + 100'000 * kUs));
    EXPECT_TRUE(spin.idle());
}

TEST(AdaptiveSpin, one_gap_moves_the_average_by_an_eighth) {
    AdaptiveSpin spin(kCeiling);
    EXPECT_EQ(spin.gap_ewma_ns(), 50 * kUs);  // ceiling / 4: the whole ceiling at first
    idle_gap(spin, 1000, 10 * kUs);
    EXPECT_EQ(spin.gap_ewma_ns(), 45 * kUs);  // 50 - (50 - 10) / 8
    idle_gap(spin, 100 * kUs, 90 * kUs);
    EXPECT_EQ(spin.gap_ewma_ns(), 50'625u);      // 45 + (90 - 45) / 8
    EXPECT_EQ(spin.spin_budget_ns(), kCeiling);  // 4 x 50.6 us is over the ceiling
    EXPECT_FALSE(spin.idle());
}

TEST(AdaptiveSpin, short_gaps_shorten_the_spin_to_four_times_the_gap) {
    AdaptiveSpin spin(kCeiling);
    uint64_t t = 1000;
    for (int i = 0; i < 200; ++i, t += 10 * kUs) {
        idle_gap(spin, t, 2 * kUs);
    }
    // Converged to within the 1/8 step's rounding (< 8 ns).
    EXPECT_GE(spin.gap_ewma_ns(), 2 * kUs);
    EXPECT_LT(spin.gap_ewma_ns(), 2 * kUs + 8);
    const uint64_t budget = spin.spin_budget_ns();
    EXPECT_EQ(budget, 4 * spin.gap_ewma_ns());
    EXPECT_TRUE(spin.keep_spinning(t));
    EXPECT_TRUE(spin.keep_spinning(t + budget - 1));
    EXPECT_FALSE(spin.keep_spinning(t + budget));
}

TEST(AdaptiveSpin, a_gap_it_slept_through_lengthens_the_next_spin) {
    AdaptiveSpin spin(kCeiling);
    uint64_t t = 1000;
    for (int i = 0; i < 200; ++i, t += 10 * kUs) {
        idle_gap(spin, t, 2 * kUs);
    }
    EXPECT_TRUE(spin.keep_spinning(t));
    EXPECT_FALSE(spin.keep_spinning(t + 20 * kUs));  // past ~8 us: sleeps
    spin.on_work(t + 30 * kUs);                      // the kick came 30 us after idle began
    EXPECT_GE(spin.gap_ewma_ns(), 2 * kUs + (28 * kUs) / 8);
    t += 100 * kUs;
    EXPECT_TRUE(spin.keep_spinning(t));
    EXPECT_TRUE(spin.keep_spinning(t + 20 * kUs));  // now covers a 20 us gap
}

TEST(AdaptiveSpin, a_gap_beyond_the_ceiling_halves_the_average) {
    AdaptiveSpin spin(kCeiling);
    idle_gap(spin, 1000, kCeiling + 1);
    EXPECT_EQ(spin.gap_ewma_ns(), 25 * kUs);
    idle_gap(spin, 10'000 * kUs, 1'000'000 * kUs);
    EXPECT_EQ(spin.gap_ewma_ns(), 12'500);
    idle_gap(spin, 2'000'000 * kUs, kCeiling);  // the ceiling itself is a gap it teaches
    EXPECT_EQ(spin.gap_ewma_ns(), 12'500 + (kCeiling - 12'500) / 8);
}

TEST(AdaptiveSpin, traffic_sparser_than_the_ceiling_stops_spinning) {
    AdaptiveSpin spin(kCeiling);
    uint64_t t = 1000;
    for (int i = 0; i < 20; ++i, t += 600 * kUs) {
        idle_gap(spin, t, 500 * kUs);  // 2000 packets a second
    }
    EXPECT_EQ(spin.gap_ewma_ns(), 0u);
    EXPECT_FALSE(spin.keep_spinning(t));  // sleeps at once: the kick wakes it
    // Dense traffic again: the gaps it slept through teach the average back.
    for (int i = 0; i < 40; ++i, t += 10 * kUs) {
        idle_gap(spin, t, 5 * kUs);
    }
    EXPECT_GT(spin.gap_ewma_ns(), 4 * kUs);
    EXPECT_TRUE(spin.keep_spinning(t));
    EXPECT_TRUE(spin.keep_spinning(t + 10 * kUs));
}

TEST(AdaptiveSpin, one_pause_in_dense_traffic_costs_little) {
    AdaptiveSpin spin(kCeiling);
    uint64_t t = 1000;
    for (int i = 0; i < 200; ++i, t += 20 * kUs) {
        idle_gap(spin, t, 10 * kUs);
    }
    idle_gap(spin, t, 10'000 * kUs);
    t += 20'000 * kUs;
    EXPECT_GE(spin.spin_budget_ns(), 19 * kUs);  // still covers the 10 us gaps
    for (int i = 0; i < 20; ++i, t += 20 * kUs) {
        idle_gap(spin, t, 10 * kUs);
    }
    EXPECT_GT(spin.gap_ewma_ns(), 9 * kUs);
}

TEST(AdaptiveSpin, long_gaps_spin_no_longer_than_the_ceiling) {
    AdaptiveSpin spin(kCeiling);
    uint64_t t = 1000;
    for (int i = 0; i < 100; ++i, t += kCeiling * 2) {
        idle_gap(spin, t, 150 * kUs);
    }
    EXPECT_GT(spin.gap_ewma_ns(), 140 * kUs);
    EXPECT_EQ(spin.spin_budget_ns(), kCeiling);
    EXPECT_TRUE(spin.keep_spinning(t));
    EXPECT_TRUE(spin.keep_spinning(t + kCeiling - 1));
    EXPECT_FALSE(spin.keep_spinning(t + kCeiling));
}

TEST(AdaptiveSpin, back_to_back_work_is_no_gap) {
    AdaptiveSpin spin(kCeiling);
    spin.on_work(1000);
    spin.on_work(2000);
    EXPECT_EQ(spin.gap_ewma_ns(), 50 * kUs);
    EXPECT_FALSE(spin.idle());
}

TEST(AdaptiveSpin, a_zero_ceiling_never_spins) {
    AdaptiveSpin spin(0);
    EXPECT_FALSE(spin.keep_spinning(1000));
    spin.on_work(1500);
    EXPECT_FALSE(spin.keep_spinning(2000));
}

TEST(AdaptiveSpin, a_clock_at_zero_still_starts_the_gap) {
    AdaptiveSpin spin(kCeiling);
    EXPECT_TRUE(spin.keep_spinning(0));
    EXPECT_TRUE(spin.idle());
    EXPECT_FALSE(spin.keep_spinning(kCeiling + 1));
}

}  // namespace
}  // namespace vnet::dataplane
