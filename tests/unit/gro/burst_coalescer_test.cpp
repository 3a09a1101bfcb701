// BurstCoalescer: how runs become GSO frames, with exact expected frames.
#include "gro/burst_coalescer.hpp"

#include <gtest/gtest.h>

#include "coalesce_checks.hpp"
#include "segment_factory.hpp"

namespace vnet::gro::testing {
namespace {

uint16_t le16_at(const Bytes& b, size_t at) {
    return static_cast<uint16_t>(b[at] | b[at + 1] << 8);
}
uint16_t be16_at(const Bytes& b, size_t at) {
    return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}

// A stream of `n` back-to-back segments of one flow.
std::vector<Bytes> stream(SegmentSpec spec, size_t n) {
    std::vector<Bytes> out;
    for (size_t i = 0; i < n; ++i) {
        spec.payload_seed = static_cast<uint32_t>(i);
        out.push_back(build_segment(spec));
        spec.seq += static_cast<uint32_t>(spec.payload_len);
        ++spec.ip_id;
    }
    return out;
}

struct Fixture {
    TestBurst in;
    std::unique_ptr<packet::PacketBurst> out = std::make_unique<packet::PacketBurst>();
    std::unique_ptr<BurstCoalescer> coalescer = std::make_unique<BurstCoalescer>();
    CoalesceResult result;

    void add_all(const std::vector<Bytes>& packets) {
        for (size_t i = 0; i < packets.size(); ++i) {
            in.add(packets[i], {}, static_cast<uint32_t>(100 + i));
        }
    }
    std::vector<uint16_t> run(uint16_t vnet_len, CoalesceOptions options = {}) {
        result = coalescer->coalesce(in.burst(), vnet_len, options, *out);
        const std::string err = check_coalesced(in, vnet_len, *coalescer, result, *out);
        EXPECT_EQ(err, "");
        return frame_sizes(*coalescer, result);
    }
};

TEST(BurstCoalescer, a_64_segment_mss_1448_stream_becomes_frames_of_45_and_19) {
    SegmentSpec spec;
    spec.payload_len = 1448;
    spec.tcp_options = timestamp_options(1, 2);
    Fixture fx;
    fx.add_all(stream(spec, 64));
    // 20 (IP) + 32 (TCP) + 45 * 1448 = 65212 <= 65535 < 20 + 32 + 46 * 1448.
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{45, 19}));
    EXPECT_EQ(fx.result.frames, 2);
    EXPECT_EQ(fx.result.merged_frames, 2);
    EXPECT_EQ(fx.result.merged_segments, 64u);
}

TEST(BurstCoalescer, merged_header_is_a_gso_request_for_the_whole_run) {
    SegmentSpec spec;
    spec.payload_len = 1000;
    spec.seq = 0xfffffe00;  // the run's sequence numbers wrap
    spec.ip_id = 0xffff;    // and so do its IP IDs
    auto packets = stream(spec, 3);
    spec.seq += 3000;
    spec.ip_id = 2;
    spec.payload_len = 10;
    spec.tcp_flags = kTcpAck | kTcpPshFlag;
    packets.push_back(build_segment(spec));
    Fixture fx;
    fx.add_all(packets);
    ASSERT_EQ(fx.run(12), (std::vector<uint16_t>{4}));
    const Bytes frame = frame_bytes(*fx.out, 0);
    ASSERT_EQ(frame.size(), 12u + 14 + 20 + 20 + 3010);
    EXPECT_EQ(frame[0], 1);                             // NEEDS_CSUM
    EXPECT_EQ(frame[1], 1);                             // GSO_TCPV4
    EXPECT_EQ(le16_at(frame, 2), 54);                   // hdr_len: Ethernet + IP + TCP
    EXPECT_EQ(le16_at(frame, 4), 1000);                 // gso_size: the head's payload
    EXPECT_EQ(le16_at(frame, 6), 34);                   // csum_start
    EXPECT_EQ(le16_at(frame, 8), 16);                   // csum_offset
    EXPECT_EQ(be16_at(frame, 26 + 2), 20 + 20 + 3010);  // tot_len
    EXPECT_EQ(be16_at(frame, 26 + 4), 0xffff);          // the head's ID
    EXPECT_EQ(frame[46 + 13], kTcpAck | kTcpPshFlag);   // the last segment's PSH
    EXPECT_EQ(fx.out->packets[0].token, 100u);
    EXPECT_EQ(fx.out->packets[0].iov_count, 5);  // header + one payload slice per segment
}

TEST(BurstCoalescer, ipv6_tcp_with_a_10_byte_header_merges_into_tcpv6) {
    SegmentSpec spec;
    spec.ipv6 = true;
    spec.vnet_len = 10;
    spec.payload_len = 1440;
    Fixture fx;
    fx.add_all(stream(spec, 5));
    ASSERT_EQ(fx.run(10), (std::vector<uint16_t>{5}));
    const Bytes frame = frame_bytes(*fx.out, 0);
    EXPECT_EQ(frame[1], 4);  // GSO_TCPV6
    EXPECT_EQ(be16_at(frame, 24 + 4), 20 + 5 * 1440);
}

TEST(BurstCoalescer, udp_merges_into_uso_only_when_enabled) {
    SegmentSpec spec;
    spec.udp = true;
    spec.payload_len = 1200;
    Fixture fx;
    fx.add_all(stream(spec, 4));
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{1, 1, 1, 1}));
    EXPECT_EQ(fx.run(12, CoalesceOptions{.tcp = true, .udp = true}), (std::vector<uint16_t>{4}));
    const Bytes frame = frame_bytes(*fx.out, 0);
    EXPECT_EQ(frame[1], 5);  // GSO_UDP_L4
    EXPECT_EQ(le16_at(frame, 8), 6);
    EXPECT_EQ(be16_at(frame, 46 + 4), 8 + 4 * 1200);  // UDP length
}

TEST(BurstCoalescer, tcp_is_left_alone_when_disabled) {
    SegmentSpec spec;
    Fixture fx;
    fx.add_all(stream(spec, 3));
    EXPECT_EQ(fx.run(12, CoalesceOptions{.tcp = false, .udp = true}),
              (std::vector<uint16_t>{1, 1, 1}));
}

TEST(BurstCoalescer, a_short_segment_or_psh_ends_the_frame) {
    SegmentSpec spec;
    spec.payload_len = 500;
    auto packets = stream(spec, 2);
    spec.seq += 1000;
    spec.ip_id += 2;
    spec.payload_len = 100;  // short: last of the frame
    packets.push_back(build_segment(spec));
    spec.seq += 100;
    ++spec.ip_id;
    spec.payload_len = 500;
    packets.push_back(build_segment(spec));
    spec.seq += 500;
    ++spec.ip_id;
    spec.tcp_flags = kTcpAck | kTcpPshFlag;
    packets.push_back(build_segment(spec));
    spec.seq += 500;
    ++spec.ip_id;
    spec.tcp_flags = kTcpAck;
    packets.push_back(build_segment(spec));
    Fixture fx;
    fx.add_all(packets);
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{3, 2, 1}));
}

TEST(BurstCoalescer, a_longer_segment_starts_a_new_frame) {
    SegmentSpec spec;
    spec.payload_len = 500;
    auto packets = stream(spec, 2);
    spec.seq += 1000;
    spec.ip_id += 2;
    spec.payload_len = 600;
    auto more = stream(spec, 2);
    packets.insert(packets.end(), more.begin(), more.end());
    Fixture fx;
    fx.add_all(packets);
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{2, 2}));
}

TEST(BurstCoalescer, interleaved_flows_merge_only_consecutive_runs) {
    SegmentSpec a;
    SegmentSpec b;
    b.src_port = 40001;
    const auto sa = stream(a, 4);
    const auto sb = stream(b, 2);
    Fixture fx;
    fx.add_all({sa[0], sa[1], sb[0], sb[1], sa[2], sa[3]});
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{2, 2, 2}));
    EXPECT_EQ(fx.coalescer->source_packets(2), 4);
}

TEST(BurstCoalescer, differing_per_flow_fields_end_the_run) {
    SegmentSpec spec;
    for (int field = 0; field < 7; ++field) {
        auto packets = stream(spec, 2);
        SegmentSpec next = spec;
        next.seq += 200;
        next.ip_id += 2;
        switch (field) {
            case 0:
                next.ack += 1;
                break;
            case 1:
                next.window += 1;
                break;
            case 2:
                next.tos = 2;
                break;
            case 3:
                next.ttl = 63;
                break;
            case 4:
                next.dont_fragment = false;
                break;
            case 5:
                next.tcp_options = timestamp_options(1, 2);
                break;
            case 6:
                next.ip_id += 5;
                break;
        }
        packets.push_back(build_segment(next));
        Fixture fx;
        fx.add_all(packets);
        EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{2, 1})) << "field " << field;
    }
}

TEST(BurstCoalescer, a_sequence_gap_ends_the_run) {
    SegmentSpec spec;
    auto packets = stream(spec, 2);
    spec.seq += 201;
    spec.ip_id += 2;
    packets.push_back(build_segment(spec));
    Fixture fx;
    fx.add_all(packets);
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{2, 1}));
}

TEST(BurstCoalescer, ipv6_frames_stop_at_65535_ip_bytes_like_kernel_gro) {
    SegmentSpec spec;
    spec.ipv6 = true;
    spec.payload_len = 8000;
    Fixture fx;
    fx.add_all(stream(spec, 10));
    // 40 + 20 + 8 * 8000 = 64060 <= 65535 < 40 + 20 + 9 * 8000.
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{8, 2}));
}

TEST(BurstCoalescer, ipv6_payload_length_stays_below_65496) {
    SegmentSpec spec;
    spec.ipv6 = true;
    spec.payload_len = 65475 / 5;  // 13095: five make an IP packet of exactly 65535 bytes
    Fixture fx;
    fx.add_all(stream(spec, 6));
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{5, 1}));
    EXPECT_EQ(frame_bytes(*fx.out, 0).size(), 12u + 14 + 65535);
}

TEST(BurstCoalescer, data_valid_segments_merge_into_a_needs_csum_frame) {
    SegmentSpec spec;
    spec.data_valid = true;
    Fixture fx;
    fx.add_all(stream(spec, 3));
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{3}));
    EXPECT_EQ(frame_bytes(*fx.out, 0)[0], 1);
}

TEST(BurstCoalescer, gso_none_hints_do_not_stop_a_merge) {
    SegmentSpec spec;
    spec.hdr_len_hint = 54;
    spec.gso_size_hint = 7;
    auto packets = stream(spec, 2);
    Fixture fx;
    fx.add_all(packets);
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{2}));
}

TEST(BurstCoalescer, headers_split_across_iovecs_anywhere_still_merge) {
    SegmentSpec spec;
    spec.tcp_options = timestamp_options(5, 6);
    const auto packets = stream(spec, 3);
    Fixture fx;
    fx.in.add(packets[0], {1, 11, 12, 12, 30, 60, 85, 86});
    fx.in.add(packets[1], {0, 0, 85});
    fx.in.add(packets[2], {86});
    EXPECT_EQ(fx.run(12), (std::vector<uint16_t>{3}));
    // Headers end at 78 (12 + 14 + 20 + 32). The header iovec, then the
    // payload slices: 78..85, 85..86, 86..end; 78..85, 85..end; 78..86, 86..end.
    EXPECT_EQ(fx.out->packets[0].iov_count, 8);
}

TEST(BurstCoalescer, a_burst_over_the_iovec_budget_passes_through_whole) {
    SegmentSpec spec;
    const auto packets = stream(spec, 64);
    Fixture fx;
    std::vector<size_t> splits;
    for (size_t s = 80; s < 95; ++s) {
        splits.push_back(s);  // 16 iovecs per packet: 1024 in all, no room for headers
    }
    for (const auto& p : packets) {
        fx.in.add(p, splits);
    }
    ASSERT_EQ(fx.in.burst().iovecs_used, 1024);
    EXPECT_EQ(fx.run(12), std::vector<uint16_t>(64, 1));
}

TEST(BurstCoalescer, source_packets_maps_a_prefix_of_frames) {
    SegmentSpec spec;
    auto packets = stream(spec, 3);
    SegmentSpec other = spec;
    other.src_port = 1;
    packets.push_back(build_segment(other));
    Fixture fx;
    fx.add_all(packets);
    ASSERT_EQ(fx.run(12), (std::vector<uint16_t>{3, 1}));
    EXPECT_EQ(fx.coalescer->source_packets(0), 0);
    EXPECT_EQ(fx.coalescer->source_packets(1), 3);
    EXPECT_EQ(fx.coalescer->source_packets(2), 4);
    EXPECT_EQ(fx.coalescer->source_packets(9), 4);
}

TEST(BurstCoalescer, an_empty_burst_gives_no_frames) {
    Fixture fx;
    EXPECT_EQ(fx.run(12), std::vector<uint16_t>{});
    EXPECT_EQ(fx.coalescer->source_packets(1), 0);
}

}  // namespace
}  // namespace vnet::gro::testing
