// The inner flow hash that picks a VXLAN datagram's source port
// (ports/vxlan/vxlan_flow_hash.hpp): one flow one lane, flows spread over
// lanes, and a hostile or short frame read only within its length.
#include "ports/vxlan/vxlan_flow_hash.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

namespace vnet::ports {
namespace {

// An Ethernet frame carrying IPv4 (or IPv6) and `protocol` with the ports
// given; `tags` VLAN tags after the MACs.
std::vector<uint8_t> frame(bool ipv6, uint8_t protocol, uint16_t sport, uint16_t dport,
                           int tags = 0, uint16_t vid = 1, uint8_t last_address_byte = 2) {
    std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 0xb, 0x02, 0, 0, 0, 0, 0xa};
    for (int t = 0; t < tags; ++t) {
        f.insert(f.end(), {t == 0 && tags == 2 ? uint8_t{0x88} : uint8_t{0x81},
                           t == 0 && tags == 2 ? uint8_t{0xa8} : uint8_t{0x00},
                           static_cast<uint8_t>(vid >> 8), static_cast<uint8_t>(vid)});
    }
    if (!ipv6) {
        f.insert(f.end(), {0x08,     0x00, 0x45, 0,  0, 40, 0, 1,  0x40, 0, 64,
                           protocol, 0,    0,    10, 0, 0,  1, 10, 0,    0, last_address_byte});
    } else {
        f.insert(f.end(), {0x86, 0xdd, 0x60, 0, 0, 0, 0, 20, protocol, 64});
        for (int a = 0; a < 2; ++a) {
            f.insert(f.end(), {0x20, 0x01, 0x0d, 0xb8});
            f.insert(f.end(), 11, 0);
            f.push_back(a == 0 ? 1 : last_address_byte);
        }
    }
    f.insert(f.end(), {static_cast<uint8_t>(sport >> 8), static_cast<uint8_t>(sport),
                       static_cast<uint8_t>(dport >> 8), static_cast<uint8_t>(dport)});
    f.insert(f.end(), 16, 0xee);  // the rest of a transport header and some payload
    return f;
}

uint32_t hash_of(const std::vector<uint8_t>& f) {
    return vxlan_inner_flow_hash(f.data(), f.size());
}

// How many of `lanes` lanes `flows` TCP flows (one source port each) use.
size_t lanes_used(bool ipv6, uint16_t lanes, uint16_t flows) {
    std::set<uint16_t> used;
    for (uint16_t port = 0; port < flows; ++port) {
        used.insert(vxlan_lane_of(hash_of(frame(ipv6, 6, 40000 + port, 5201)), lanes));
    }
    return used.size();
}

TEST(VxlanFlowHash, one_flow_hashes_alike_whatever_its_payload) {
    std::vector<uint8_t> a = frame(false, 6, 40000, 5201);
    std::vector<uint8_t> b = a;
    b.back() = 0x11;   // payload, sequence numbers: not the flow
    b[14 + 2] = 0x05;  // the IPv4 total length
    EXPECT_EQ(hash_of(a), hash_of(b));
    b.resize(b.size() + 1000, 0x77);
    EXPECT_EQ(hash_of(a), hash_of(b));
}

TEST(VxlanFlowHash, ports_addresses_and_protocol_each_change_it) {
    const uint32_t base = hash_of(frame(false, 6, 40000, 5201));
    EXPECT_NE(base, hash_of(frame(false, 6, 40001, 5201)));
    EXPECT_NE(base, hash_of(frame(false, 6, 40000, 5202)));
    EXPECT_NE(base, hash_of(frame(false, 17, 40000, 5201)));
    EXPECT_NE(base, hash_of(frame(false, 6, 40000, 5201, 0, 1, 3)));
}

TEST(VxlanFlowHash, tcp_flows_spread_over_every_lane) {
    EXPECT_EQ(lanes_used(false, 8, 256), 8u);
    EXPECT_EQ(lanes_used(true, 8, 256), 8u);
    EXPECT_EQ(lanes_used(false, 64, 4096), 64u);
    EXPECT_EQ(lanes_used(false, 1, 256), 1u);  // one lane: lane 0, always
}

TEST(VxlanFlowHash, flows_spread_evenly) {
    std::array<uint32_t, 8> per_lane{};
    for (uint16_t port = 0; port < 8000; ++port) {
        ++per_lane[vxlan_lane_of(hash_of(frame(false, 17, 1024 + port, 4789)), 8)];
    }
    for (const uint32_t n : per_lane) {
        EXPECT_GT(n, 800u);  // 1000 each when even
        EXPECT_LT(n, 1200u);
    }
}

TEST(VxlanFlowHash, an_ipv4_fragment_hashes_on_addresses_only) {
    std::vector<uint8_t> first = frame(false, 17, 40000, 53);
    first[14 + 6] = 0x20;  // more fragments
    std::vector<uint8_t> other_ports = frame(false, 17, 40001, 54);
    other_ports[14 + 6] = 0x20;
    EXPECT_EQ(hash_of(first), hash_of(other_ports));
    std::vector<uint8_t> later = frame(false, 17, 0x1234, 0x5678);  // payload bytes, not ports
    later[14 + 7] = 0xb9;                                           // offset 185 * 8
    EXPECT_EQ(hash_of(first), hash_of(later));
}

TEST(VxlanFlowHash, ipv4_options_move_the_ports) {
    std::vector<uint8_t> f = frame(false, 6, 40000, 5201);
    std::vector<uint8_t> with_options = f;
    with_options[14] = 0x46;  // IHL 6: one word of options
    with_options.insert(with_options.begin() + 14 + 20, {1, 1, 1, 0});
    EXPECT_EQ(hash_of(f), hash_of(with_options));
}

TEST(VxlanFlowHash, ipv6_behind_an_extension_header_hashes_on_addresses) {
    std::vector<uint8_t> a = frame(true, 44, 40000, 5201);  // a fragment header next
    std::vector<uint8_t> b = frame(true, 44, 40001, 5202);
    EXPECT_EQ(hash_of(a), hash_of(b));
    EXPECT_NE(hash_of(frame(true, 6, 40000, 5201)), hash_of(frame(true, 6, 40001, 5201)));
}

TEST(VxlanFlowHash, vlan_tagged_frames_hash_their_ports_and_vid) {
    const uint32_t tagged = hash_of(frame(false, 6, 40000, 5201, 1, 10));
    EXPECT_NE(tagged, hash_of(frame(false, 6, 40001, 5201, 1, 10)));
    EXPECT_NE(tagged, hash_of(frame(false, 6, 40000, 5201, 1, 11)));
    EXPECT_EQ(tagged, hash_of(frame(false, 6, 40000, 5201, 1, 10)));
    // 802.1ad then 802.1Q
    EXPECT_NE(hash_of(frame(true, 17, 1, 2, 2, 10)), hash_of(frame(true, 17, 1, 3, 2, 10)));
}

// Every prefix of a frame, each in a heap block of exactly its size (so a
// read past the end is an ASan error), hashes without reading beyond it.
TEST(VxlanFlowHash, truncated_frames_are_read_only_within_their_length) {
    for (const auto& f : {frame(false, 6, 1, 2), frame(true, 17, 1, 2), frame(false, 6, 1, 2, 2),
                          frame(true, 6, 1, 2, 1)}) {
        std::set<uint32_t> hashes;
        for (size_t len = 0; len <= f.size(); ++len) {
            auto copy = std::make_unique<uint8_t[]>(len == 0 ? 1 : len);
            std::memcpy(copy.get(), f.data(), len);
            hashes.insert(vxlan_inner_flow_hash(copy.get(), len));
        }
        EXPECT_GT(hashes.size(), 4u);  // the prefixes are not all one
    }
}

TEST(VxlanFlowHash, a_frame_claiming_more_header_than_it_has_is_safe) {
    std::vector<uint8_t> f = frame(false, 6, 1, 2);
    f[14] = 0x4f;  // IHL 15: 60 bytes of header, ports beyond the frame
    f.resize(14 + 20);
    auto copy = std::make_unique<uint8_t[]>(f.size());
    std::memcpy(copy.get(), f.data(), f.size());
    (void)vxlan_inner_flow_hash(copy.get(), f.size());
    f[14] = 0x41;  // IHL 1: shorter than the fixed header, no ports
    EXPECT_EQ(vxlan_inner_flow_hash(f.data(), f.size()), vxlan_inner_flow_hash(f.data(), f.size()));
}

}  // namespace
}  // namespace vnet::ports
