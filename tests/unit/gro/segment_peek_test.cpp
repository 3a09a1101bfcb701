// may_be_segment() and BurstCoalescer::may_merge(): the cheap in-place
// look that lets a burst with nothing to merge skip GRO. Their one duty is
// never to refuse what parse_segment() / coalesce() would take.
#include <gtest/gtest.h>

#include <random>

#include "gro/burst_coalescer.hpp"
#include "gro/segment_header.hpp"
#include "segment_factory.hpp"

namespace vnet::gro {
namespace {

using testing::build_segment;
using testing::Bytes;
using testing::SegmentSpec;
using testing::TestBurst;

SegmentSpec make_spec(bool ipv6, bool udp, uint8_t vnet_len = 12, bool data_valid = false) {
    SegmentSpec spec;
    spec.ipv6 = ipv6;
    spec.udp = udp;
    spec.vnet_len = vnet_len;
    spec.data_valid = data_valid;
    return spec;
}

bool peek(const TestBurst& b, uint16_t i, uint8_t vnet_len, bool tcp, bool udp) {
    return may_be_segment(b.burst().packet_iovecs(i), b.burst().packets[i].len, vnet_len, tcp, udp);
}

TEST(GroSegmentPeek, takes_every_well_formed_segment_of_an_enabled_kind_at_any_split) {
    for (bool ipv6 : {false, true}) {
        for (bool udp : {false, true}) {
            for (uint8_t vnet_len : {uint8_t{10}, uint8_t{12}}) {
                for (bool data_valid : {false, true}) {
                    SegmentSpec spec = make_spec(ipv6, udp, vnet_len, data_valid);
                    spec.payload_len = 30;
                    const Bytes bytes = build_segment(spec);
                    for (size_t cut = 0; cut <= bytes.size(); ++cut) {
                        TestBurst b;
                        b.add(bytes, {cut});
                        SegmentHeader seg;
                        ASSERT_TRUE(parse_segment(b.burst().packet_iovecs(0),
                                                  b.burst().packets[0].len, vnet_len, seg));
                        EXPECT_TRUE(peek(b, 0, vnet_len, !udp, udp)) << "cut " << cut;
                        EXPECT_FALSE(peek(b, 0, vnet_len, udp, !udp)) << "cut " << cut;
                    }
                }
            }
        }
    }
}

TEST(GroSegmentPeek, refuses_gso_frames_frames_without_checksum_state_and_non_ip) {
    SegmentSpec spec;
    const Bytes good = build_segment(spec);
    auto refused = [&](const Bytes& bytes) {
        TestBurst b;
        b.add(bytes);
        return !peek(b, 0, 12, true, true);
    };
    Bytes gso = good;
    gso[1] = 1;  // VIRTIO_NET_HDR_GSO_TCPV4
    EXPECT_TRUE(refused(gso));
    Bytes no_csum = good;
    no_csum[0] = 0;
    EXPECT_TRUE(refused(no_csum));
    Bytes vlan = good;
    vlan[12 + 12] = 0x81;
    vlan[12 + 13] = 0x00;
    EXPECT_TRUE(refused(vlan));
    Bytes options = good;
    options[12 + 14] = 0x46;  // IPv4 with options
    EXPECT_TRUE(refused(options));
    Bytes icmp = good;
    icmp[12 + 14 + 9] = 1;
    EXPECT_TRUE(refused(icmp));
    EXPECT_TRUE(refused(Bytes(good.begin(), good.begin() + 12 + 14 + 8)));  // too short
    EXPECT_FALSE(refused(good));
}

TEST(GroSegmentPeek, refuses_when_the_iovecs_hold_less_than_len) {
    SegmentSpec spec;
    const Bytes good = build_segment(spec);
    TestBurst b;
    b.add_with_len(Bytes(good.begin(), good.begin() + 20), {}, 0,
                   static_cast<uint32_t>(good.size()));
    EXPECT_FALSE(peek(b, 0, 12, true, true));
}

// Whatever the bytes, a packet parse_segment() takes as an enabled kind is
// never refused by the peek.
TEST(GroSegmentPeek, never_refuses_what_parse_segment_takes_on_spoiled_packets) {
    std::mt19937 rng(1201);
    int parsed = 0;
    for (int round = 0; round < 60000; ++round) {
        const bool ipv6 = rng() % 2 == 0;
        const bool udp = rng() % 2 == 0;
        const auto vnet_len = static_cast<uint8_t>(rng() % 2 == 0 ? 10 : 12);
        SegmentSpec spec = make_spec(ipv6, udp, vnet_len, rng() % 2 == 0);
        spec.payload_len = 1 + rng() % 40;
        Bytes bytes = build_segment(spec);
        // Spoil up to three header bytes (often none, so some still parse).
        for (unsigned k = rng() % 4; k > 0; --k) {
            bytes[rng() % std::min<size_t>(bytes.size(), 80)] = static_cast<uint8_t>(rng());
        }
        TestBurst b;
        std::vector<size_t> cuts;
        for (unsigned k = rng() % 3; k > 0; --k) {
            cuts.push_back(rng() % (bytes.size() + 1));
        }
        std::sort(cuts.begin(), cuts.end());
        b.add(bytes, cuts);
        const bool tcp_on = rng() % 4 != 0;
        const bool udp_on = rng() % 2 == 0;
        SegmentHeader seg;
        const bool takes = parse_segment(b.burst().packet_iovecs(0), b.burst().packets[0].len,
                                         spec.vnet_len, seg) &&
                           (is_tcp(seg.kind) ? tcp_on : udp_on);
        parsed += takes ? 1 : 0;
        if (takes) {
            ASSERT_TRUE(peek(b, 0, spec.vnet_len, tcp_on, udp_on)) << "round " << round;
        }
    }
    EXPECT_GT(parsed, 1000);  // the property was really exercised
}

TEST(GroMayMerge, needs_two_consecutive_candidates) {
    SegmentSpec tcp;
    SegmentSpec udp = make_spec(false, true);
    const CoalesceOptions tcp_only{.tcp = true, .udp = false};
    {
        TestBurst b;
        for (int i = 0; i < 8; ++i) {
            b.add(build_segment(udp));
        }
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 12, tcp_only));
        EXPECT_TRUE(BurstCoalescer::may_merge(b.burst(), 12, {.tcp = true, .udp = true}));
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 10, tcp_only));
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 11, {.tcp = true, .udp = true}));
    }
    {
        TestBurst b;
        for (int i = 0; i < 8; ++i) {
            b.add(build_segment(i % 2 == 0 ? tcp : udp));
        }
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 12, tcp_only));
    }
    {
        TestBurst b;
        b.add(build_segment(udp));
        b.add(build_segment(tcp));
        tcp.seq += static_cast<uint32_t>(tcp.payload_len);
        ++tcp.ip_id;
        b.add(build_segment(tcp));
        EXPECT_TRUE(BurstCoalescer::may_merge(b.burst(), 12, tcp_only));
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 12, {.tcp = false, .udp = false}));
    }
    {
        TestBurst b;
        b.add(build_segment(tcp));
        EXPECT_FALSE(BurstCoalescer::may_merge(b.burst(), 12, tcp_only));
    }
}

// Every TCP/UDP pattern of up to 8 packets (gro_udp off): true exactly when
// two TCP segments are neighbours, wherever the pair sits.
TEST(GroMayMerge, finds_a_pair_at_any_position) {
    const CoalesceOptions tcp_only{.tcp = true, .udp = false};
    const Bytes tcp = build_segment(make_spec(false, false));
    const Bytes udp = build_segment(make_spec(false, true));
    for (unsigned n = 0; n <= 8; ++n) {
        for (unsigned pattern = 0; pattern < (1u << n); ++pattern) {
            TestBurst b;
            bool pair = false;
            for (unsigned i = 0; i < n; ++i) {
                const bool is_tcp_packet = (pattern >> i & 1) != 0;
                b.add(is_tcp_packet ? tcp : udp);
                pair |= i > 0 && is_tcp_packet && (pattern >> (i - 1) & 1) != 0;
            }
            EXPECT_EQ(BurstCoalescer::may_merge(b.burst(), 12, tcp_only), pair)
                << "n " << n << " pattern " << pattern;
        }
    }
}

// A burst may_merge() refuses is one coalesce() would not merge anything of.
TEST(GroMayMerge, is_never_false_for_a_burst_coalesce_merges) {
    std::mt19937 rng(77);
    int merged_bursts = 0;
    BurstCoalescer coalescer;
    auto out = std::make_unique<packet::PacketBurst>();
    for (int round = 0; round < 4000; ++round) {
        TestBurst b;
        const bool ipv6 = rng() % 2 == 0;
        SegmentSpec spec = make_spec(ipv6, rng() % 3 == 0);
        const int n = 2 + static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i) {
            spec.payload_len = 20;
            Bytes bytes = build_segment(spec);
            if (rng() % 5 == 0) {
                bytes[rng() % std::min<size_t>(bytes.size(), 60)] ^= static_cast<uint8_t>(rng());
            }
            b.add(bytes, {rng() % (bytes.size() + 1)});
            spec.seq += 20;
            ++spec.ip_id;
        }
        const CoalesceOptions options{.tcp = rng() % 4 != 0, .udp = rng() % 2 == 0};
        const CoalesceResult r = coalescer.coalesce(b.burst(), 12, options, *out);
        merged_bursts += r.merged_frames != 0 ? 1 : 0;
        if (r.merged_frames != 0) {
            ASSERT_TRUE(BurstCoalescer::may_merge(b.burst(), 12, options)) << "round " << round;
        }
    }
    EXPECT_GT(merged_bursts, 500);
}

}  // namespace
}  // namespace vnet::gro
