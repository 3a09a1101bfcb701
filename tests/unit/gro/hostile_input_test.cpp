// Hostile or merely unusual guest packets: each one passes through unchanged
// (same iovecs, len and token) and its clean neighbours still merge.
#include <gtest/gtest.h>

#include <functional>

#include "coalesce_checks.hpp"
#include "gro/burst_coalescer.hpp"
#include "segment_factory.hpp"

namespace vnet::gro::testing {
namespace {

constexpr size_t kVnet = 12;
constexpr size_t kL3 = kVnet + 14;
constexpr size_t kL4 = kL3 + 20;

void put16(Bytes& b, size_t at, uint32_t v) {
    b[at] = static_cast<uint8_t>(v >> 8);
    b[at + 1] = static_cast<uint8_t>(v);
}

void fix_ipv4_checksum(Bytes& b) {
    put16(b, kL3 + 10, 0);
    put16(b, kL3 + 10, static_cast<uint16_t>(~ref_checksum_fold(ref_checksum_add(0, &b[kL3], 20))));
}

struct Packet {
    Bytes bytes;
    uint32_t len;
};

struct HostileCase {
    const char* name;
    std::function<void(Packet&)> spoil;
};

const std::vector<HostileCase>& hostile_cases() {
    static const std::vector<HostileCase> cases = {
        {"len_shorter_than_the_vnet_header",
         [](Packet& p) {
             p.bytes.resize(5);
             p.len = 5;
         }},
        {"empty_packet",
         [](Packet& p) {
             p.bytes.clear();
             p.len = 0;
         }},
        {"truncated_in_the_ip_header",
         [](Packet& p) {
             p.bytes.resize(kL3 + 10);
             p.len = kL3 + 10;
         }},
        {"truncated_in_the_tcp_header",
         [](Packet& p) {
             p.bytes.resize(kL4 + 10);
             p.len = kL4 + 10;
         }},
        {"ihl_below_5",
         [](Packet& p) {
             p.bytes[kL3] = 0x44;
             fix_ipv4_checksum(p.bytes);
         }},
        {"ihl_above_5",
         [](Packet& p) {
             p.bytes[kL3] = 0x46;
             fix_ipv4_checksum(p.bytes);
         }},
        {"ip_version_not_4",
         [](Packet& p) {
             p.bytes[kL3] = 0x65;
             fix_ipv4_checksum(p.bytes);
         }},
        {"tot_len_longer_than_the_frame",
         [](Packet& p) {
             put16(p.bytes, kL3 + 2, p.len - kL3 + 1);
             fix_ipv4_checksum(p.bytes);
         }},
        {"tot_len_shorter_than_the_frame",
         [](Packet& p) {
             put16(p.bytes, kL3 + 2, p.len - kL3 - 1);
             fix_ipv4_checksum(p.bytes);
         }},
        {"ethernet_padding_after_the_ip_packet",
         [](Packet& p) {
             p.bytes.resize(p.bytes.size() + 4);
             p.len += 4;
         }},
        {"ip_more_fragments",
         [](Packet& p) {
             put16(p.bytes, kL3 + 6, 0x6000);
             fix_ipv4_checksum(p.bytes);
         }},
        {"ip_fragment_offset",
         [](Packet& p) {
             put16(p.bytes, kL3 + 6, 0x0010);
             fix_ipv4_checksum(p.bytes);
         }},
        {"bad_ipv4_header_checksum", [](Packet& p) { p.bytes[kL3 + 11] ^= 1; }},
        {"vlan_tag",
         [](Packet& p) {
             const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x05};
             p.bytes.insert(p.bytes.begin() + kVnet + 12, tag, tag + 4);
             p.len += 4;
         }},
        {"gso_type_already_set",
         [](Packet& p) {
             p.bytes[1] = 1;
             p.bytes[4] = 100;
         }},
        {"gso_type_ecn_bit", [](Packet& p) { p.bytes[1] = 0x80; }},
        {"no_checksum_offload_flags", [](Packet& p) { p.bytes[0] = 0; }},
        {"needs_csum_and_data_valid", [](Packet& p) { p.bytes[0] = 3; }},
        {"csum_offset_wrong", [](Packet& p) { p.bytes[8] = 17; }},
        {"csum_start_wrong", [](Packet& p) { p.bytes[6] = 33; }},
        {"l4_check_not_the_pseudo_header_sum", [](Packet& p) { p.bytes[kL4 + 17] ^= 1; }},
        {"tcp_data_offset_below_5", [](Packet& p) { p.bytes[kL4 + 12] = 0x40; }},
        {"tcp_data_offset_past_the_end",
         [](Packet& p) {
             p.bytes.resize(kL4 + 40);  // 40 TCP bytes, data offset says 60
             p.len = kL4 + 40;
             put16(p.bytes, kL3 + 2, 60);
             fix_ipv4_checksum(p.bytes);
             p.bytes[kL4 + 12] = 0xf0;
         }},
        {"syn", [](Packet& p) { p.bytes[kL4 + 13] |= 0x02; }},
        {"fin", [](Packet& p) { p.bytes[kL4 + 13] |= 0x01; }},
        {"rst", [](Packet& p) { p.bytes[kL4 + 13] |= 0x04; }},
        {"urg", [](Packet& p) { p.bytes[kL4 + 13] |= 0x20; }},
        {"cwr", [](Packet& p) { p.bytes[kL4 + 13] |= 0x80; }},
        {"not_tcp_or_udp",
         [](Packet& p) {
             p.bytes[kL3 + 9] = 1;
             fix_ipv4_checksum(p.bytes);
         }},
        {"len_longer_than_the_iovecs", [](Packet& p) { p.len += 1; }},
        {"len_shorter_than_the_iovecs", [](Packet& p) { p.len -= 1; }},
        {"no_payload",
         [](Packet& p) {
             p.bytes.resize(kL4 + 20);
             p.len = kL4 + 20;
             put16(p.bytes, kL3 + 2, 40);
             fix_ipv4_checksum(p.bytes);
         }},
    };
    return cases;
}

// Three back-to-back 100-byte segments with packet `bad` spoiled.
std::vector<Packet> run_with_one_spoiled(size_t bad, const HostileCase& c) {
    SegmentSpec spec;
    std::vector<Packet> packets;
    for (size_t i = 0; i < 3; ++i) {
        Bytes b = build_segment(spec);
        packets.push_back(Packet{b, static_cast<uint32_t>(b.size())});
        spec.seq += 100;
        ++spec.ip_id;
    }
    c.spoil(packets[bad]);
    return packets;
}

std::vector<uint16_t> coalesce_sizes(const std::vector<Packet>& packets, std::string& err) {
    TestBurst in;
    for (size_t i = 0; i < packets.size(); ++i) {
        // Split inside the headers too, so parsing gathers across iovecs.
        in.add_with_len(packets[i].bytes, {7, 30}, static_cast<uint32_t>(i), packets[i].len);
    }
    auto out = std::make_unique<packet::PacketBurst>();
    BurstCoalescer coalescer;
    const CoalesceResult r = coalescer.coalesce(in.burst(), kVnet, {}, *out);
    err = check_coalesced(in, kVnet, coalescer, r, *out);
    return frame_sizes(coalescer, r);
}

TEST(GroHostileInput, a_spoiled_middle_segment_passes_through_and_splits_the_run) {
    for (const HostileCase& c : hostile_cases()) {
        std::string err;
        EXPECT_EQ(coalesce_sizes(run_with_one_spoiled(1, c), err), (std::vector<uint16_t>{1, 1, 1}))
            << c.name;
        EXPECT_EQ(err, "") << c.name;
    }
}

TEST(GroHostileInput, a_spoiled_head_passes_through_and_the_rest_still_merges) {
    for (const HostileCase& c : hostile_cases()) {
        std::string err;
        EXPECT_EQ(coalesce_sizes(run_with_one_spoiled(0, c), err), (std::vector<uint16_t>{1, 2}))
            << c.name;
        EXPECT_EQ(err, "") << c.name;
    }
}

TEST(GroHostileInput, ipv6_extension_header_passes_through) {
    SegmentSpec spec;
    spec.ipv6 = true;
    std::vector<Packet> packets;
    for (size_t i = 0; i < 3; ++i) {
        Bytes b = build_segment(spec);
        packets.push_back(Packet{b, static_cast<uint32_t>(b.size())});
        spec.seq += 100;
    }
    packets[1].bytes[kL3 + 6] = 0;  // hop-by-hop options header
    std::string err;
    EXPECT_EQ(coalesce_sizes(packets, err), (std::vector<uint16_t>{1, 1, 1}));
    EXPECT_EQ(err, "");
}

TEST(GroHostileInput, udp_length_lying_or_zero_check_with_data_valid_passes_through) {
    const CoalesceOptions udp_on{.tcp = true, .udp = true};
    for (int variant = 0; variant < 2; ++variant) {
        SegmentSpec spec;
        spec.udp = true;
        spec.data_valid = variant == 1;
        TestBurst in;
        for (size_t i = 0; i < 3; ++i) {
            Bytes b = build_segment(spec);
            if (i == 1) {
                if (variant == 0) {
                    b[kL4 + 5] ^= 1;  // UDP length
                } else {
                    b[kL4 + 6] = b[kL4 + 7] = 0;  // "no checksum"
                }
            }
            in.add(b);
            ++spec.ip_id;
        }
        auto out = std::make_unique<packet::PacketBurst>();
        BurstCoalescer coalescer;
        const CoalesceResult r = coalescer.coalesce(in.burst(), kVnet, udp_on, *out);
        EXPECT_EQ(check_coalesced(in, kVnet, coalescer, r, *out), "");
        EXPECT_EQ(frame_sizes(coalescer, r), (std::vector<uint16_t>{1, 1, 1})) << variant;
    }
}

TEST(GroHostileInput, a_vnet_header_size_other_than_10_or_12_passes_everything_through) {
    SegmentSpec spec;
    TestBurst in;
    for (size_t i = 0; i < 3; ++i) {
        in.add(build_segment(spec));
        spec.seq += 100;
        ++spec.ip_id;
    }
    auto out = std::make_unique<packet::PacketBurst>();
    BurstCoalescer coalescer;
    const CoalesceResult r = coalescer.coalesce(in.burst(), 20, {}, *out);
    EXPECT_EQ(frame_sizes(coalescer, r), (std::vector<uint16_t>{1, 1, 1}));
}

}  // namespace
}  // namespace vnet::gro::testing
