// tcp_checksum_verifies: true only for a TCP segment over plain IPv4 or
// IPv6 whose checksum is right; every length field it reads is checked
// against the frame, never trusted.
#include "packet/tcp_checksum_check.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "packet/byte_order.hpp"
#include "packet/wire.hpp"
#include "unit/gro/segment_factory.hpp"

namespace vnet::packet {
namespace {

// A TCP segment with a complete checksum, as it crossed a wire (no
// virtio-net header).
std::vector<uint8_t> segment(bool ipv6 = false, bool udp = false, size_t payload = 300) {
    gro::testing::SegmentSpec spec;
    spec.ipv6 = ipv6;
    spec.udp = udp;
    spec.data_valid = true;
    spec.payload_len = payload;
    const auto packet = gro::testing::build_segment(spec);
    return {packet.begin() + spec.vnet_len, packet.end()};
}

bool verifies(const std::vector<uint8_t>& f) {
    return tcp_checksum_verifies(f.data(), static_cast<uint32_t>(f.size()));
}

TEST(TcpChecksumCheck, a_right_checksum_verifies_over_ipv4_and_ipv6) {
    EXPECT_TRUE(verifies(segment(false)));
    EXPECT_TRUE(verifies(segment(true)));
    EXPECT_TRUE(verifies(segment(false, false, 1)));  // an odd length
}

TEST(TcpChecksumCheck, one_changed_byte_anywhere_the_checksum_covers_fails) {
    for (bool ipv6 : {false, true}) {
        const auto good = segment(ipv6);
        const size_t l3 = kEthHeaderLen;
        const size_t addresses = ipv6 ? l3 + kIpv6SrcOffset : l3 + kIpv4SrcOffset;
        const size_t l4 = l3 + (ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen);
        for (size_t at : {addresses, l4, l4 + kTcpCheckOffset, l4 + 25, good.size() - 1}) {
            auto bad = good;
            bad[at] ^= 0x01;
            EXPECT_FALSE(verifies(bad)) << "byte " << at << (ipv6 ? " (IPv6)" : " (IPv4)");
        }
    }
}

TEST(TcpChecksumCheck, ethernet_padding_after_the_ip_packet_is_not_summed) {
    auto f = segment(false, false, 4);
    f.resize(f.size() + 10, 0xee);
    EXPECT_TRUE(verifies(f));
}

TEST(TcpChecksumCheck, what_is_not_a_plain_tcp_segment_is_not_checked) {
    EXPECT_FALSE(verifies(segment(false, true)));  // UDP
    EXPECT_FALSE(verifies(segment(true, true)));
    auto fragment = segment();
    store_be16(fragment.data() + kEthHeaderLen + kIpv4FragOffset, kIpv4MoreFragments);
    EXPECT_FALSE(verifies(fragment));
    auto options = segment();
    options[kEthHeaderLen] = 0x46;  // IHL 6
    EXPECT_FALSE(verifies(options));
    auto vlan = segment();
    store_be16(vlan.data() + kEthTypeOffset, kEtherTypeVlan);
    EXPECT_FALSE(verifies(vlan));
}

TEST(TcpChecksumCheck, a_length_field_past_the_frame_is_refused_not_followed) {
    auto v4 = segment(false);
    store_be16(v4.data() + kEthHeaderLen + kIpv4TotalLenOffset,
               static_cast<uint16_t>(v4.size() - kEthHeaderLen + 1));
    EXPECT_FALSE(verifies(v4));
    store_be16(v4.data() + kEthHeaderLen + kIpv4TotalLenOffset, 39);  // under IP + TCP
    EXPECT_FALSE(verifies(v4));
    auto v6 = segment(true);
    store_be16(v6.data() + kEthHeaderLen + kIpv6PayloadLenOffset,
               static_cast<uint16_t>(v6.size() - kEthHeaderLen - kIpv6HeaderLen + 1));
    EXPECT_FALSE(verifies(v6));
    // Frames too short for the headers, down to nothing.
    const auto good = segment();
    for (uint32_t len : {0u, 13u, 14u, 53u}) {
        EXPECT_FALSE(tcp_checksum_verifies(good.data(), len)) << len;
    }
}

}  // namespace
}  // namespace vnet::packet
