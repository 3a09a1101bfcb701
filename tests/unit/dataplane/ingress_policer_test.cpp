// Ingress policing's token bucket with the clock driven by the test: exact
// packets passed and dropped for a given clock sequence.
//
// The numbers: at 1000 kbit/s a bit takes 1000 ns; a 64-byte frame (the
// burst's packets carry a 12-byte virtio-net header on top, not charged)
// costs 512 bits = 512 us. A burst of 8 kbit holds 15 such frames (7680
// bits) and 320 bits to spare.
#include "dataplane/ingress_policer.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace vnet::dataplane {
namespace {

constexpr uint32_t kHeader = 12;
constexpr uint64_t kStart = 1'000'000'000;  // t = 1 s
constexpr uint64_t kFrame64Ns = 512'000;    // a 64-byte frame at 1000 kbit/s

packet::PacketBurst burst_of(uint16_t n, uint32_t frame_bytes) {
    packet::PacketBurst b;
    for (uint16_t i = 0; i < n; ++i) {
        b.push(0, frame_bytes + kHeader, i);
    }
    return b;
}

TEST(IngressPolicer, off_passes_everything) {
    IngressPolicer p;
    EXPECT_FALSE(p.enabled());
    EXPECT_EQ(p.police(burst_of(64, 1500), kStart), 0u);
    p.configure(1000, 8);
    p.configure(0, 8);
    EXPECT_FALSE(p.enabled());
    EXPECT_EQ(p.police(burst_of(64, 1500), kStart), 0u);
}

TEST(IngressPolicer, a_full_bucket_passes_the_newest_that_fit_and_drops_the_oldest) {
    IngressPolicer p;
    p.configure(1000, 8);
    EXPECT_EQ(p.tokens_bits(kStart), 8000u);
    EXPECT_EQ(p.police(burst_of(20, 64), kStart), 5u);  // 15 pass
    EXPECT_EQ(p.tokens_bits(kStart), 320u);
    EXPECT_EQ(p.police(burst_of(1, 64), kStart), 1u);  // nothing earned at the same instant
}

TEST(IngressPolicer, an_empty_bucket_refills_at_the_rate) {
    IngressPolicer p;
    p.configure(1000, 8);
    ASSERT_EQ(p.police(burst_of(20, 64), kStart), 5u);
    // 320 bits left: the next 64-byte frame needs 192 more, 192 us.
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 191'999), 1u);
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 192'000), 0u);
    // Then one every 512 us, exactly.
    EXPECT_EQ(p.police(burst_of(2, 64), kStart + 192'000 + kFrame64Ns), 1u);
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 192'000 + 2 * kFrame64Ns - 1), 1u);
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 192'000 + 2 * kFrame64Ns), 0u);
}

TEST(IngressPolicer, a_pause_refills_no_more_than_the_burst) {
    IngressPolicer p;
    p.configure(1000, 8);
    ASSERT_EQ(p.police(burst_of(20, 64), kStart), 5u);
    const uint64_t later = kStart + 3600'000'000'000;  // an hour
    EXPECT_EQ(p.tokens_bits(later), 8000u);
    EXPECT_EQ(p.police(burst_of(20, 64), later), 5u);
}

TEST(IngressPolicer, a_big_old_packet_is_dropped_while_a_small_new_one_passes) {
    IngressPolicer p;
    p.configure(1000, 8);
    packet::PacketBurst b;
    b.push(0, 1500 + kHeader, 0);  // 12000 bits: more than the whole bucket
    b.push(0, 64 + kHeader, 1);    // 512 bits
    EXPECT_EQ(p.police(b, kStart), 1u);
    EXPECT_EQ(p.tokens_bits(kStart), 8000u - 512u);
}

TEST(IngressPolicer, the_virtio_net_header_is_not_charged) {
    IngressPolicer p;
    p.configure(1000, 8);
    ASSERT_EQ(p.police(burst_of(20, 64), kStart), 5u);
    packet::PacketBurst headers_only = burst_of(3, 0);
    EXPECT_EQ(p.police(headers_only, kStart), 0u);
    EXPECT_EQ(p.tokens_bits(kStart), 320u);
}

TEST(IngressPolicer, burst_0_is_ovs_default_of_8000_kbit) {
    IngressPolicer p;
    p.configure(1000, 0);
    EXPECT_EQ(p.burst_kbit(), 0u);
    EXPECT_EQ(p.tokens_bits(kStart), 8'000'000u);
}

TEST(IngressPolicer, configuring_again_starts_with_a_full_bucket) {
    IngressPolicer p;
    p.configure(1000, 8);
    ASSERT_EQ(p.police(burst_of(20, 64), kStart), 5u);
    p.configure(2000, 4);  // 4000 bits at 2 bits/us
    EXPECT_EQ(p.tokens_bits(kStart), 4000u);
    EXPECT_EQ(p.police(burst_of(10, 64), kStart), 3u);  // 7 * 512 = 3584
    // 416 bits left, 96 more needed: 48 us at 2 bits/us.
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 47'999), 1u);
    EXPECT_EQ(p.police(burst_of(1, 64), kStart + 48'000), 0u);
}

// Over any clock sequence what passes stays within the bucket's bound,
// burst + rate * elapsed, and a sender that always offers more gets it all
// but for less than one frame.
TEST(IngressPolicer, passes_burst_plus_rate_times_elapsed_and_no_more) {
    IngressPolicer p;
    p.configure(1000, 8);
    uint64_t passed_bits = 0;
    uint64_t t = kStart;
    for (int i = 0; i < 10'000; ++i, t += 37'000 + static_cast<uint64_t>(i % 7) * 11'000) {
        const packet::PacketBurst b = burst_of(4, 64);
        passed_bits += static_cast<uint64_t>(4 - p.police(b, t)) * 512;
    }
    const uint64_t elapsed = t - kStart;
    const uint64_t bound = 8000 + elapsed / 1000;  // bits
    EXPECT_LE(passed_bits, bound);
    EXPECT_GT(passed_bits + 512, bound - p.tokens_bits(t));
}

}  // namespace
}  // namespace vnet::dataplane
