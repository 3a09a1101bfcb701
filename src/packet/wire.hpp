// Wire formats: the header sizes, field offsets, ethertypes, protocol
// numbers and flag bits of Ethernet, 802.1Q, IPv4, IPv6, TCP and UDP that
// the parsers (GRO), builders (vnet-pktgen, tests) and ports share. Offsets
// are from the start of their own header; fields are big-endian
// (packet/byte_order.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace vnet::packet {

// Ethernet II (IEEE 802.3 §3.1.1): destination, source, ethertype.
using MacAddress = std::array<uint8_t, 6>;
inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kEthDstOffset = 0;
inline constexpr size_t kEthSrcOffset = 6;
inline constexpr size_t kEthTypeOffset = 12;
// The smallest frame on the wire without its FCS (60 = 64 - 4).
inline constexpr size_t kEthMinFrameLen = 60;
// One 802.1Q tag: what the kernel may add to an MTU-sized frame on a tap.
inline constexpr size_t kVlanTagLen = 4;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeRarp = 0x8035;  // RFC 903

// IPv4 (RFC 791), without options (ihl == 5).
inline constexpr size_t kIpv4HeaderLen = 20;
inline constexpr uint8_t kIpv4VersionIhl5 = 0x45;  // version 4, 5 words
inline constexpr size_t kIpv4TotalLenOffset = 2;
inline constexpr size_t kIpv4IdOffset = 4;
inline constexpr size_t kIpv4FragOffset = 6;  // flags + fragment offset
inline constexpr size_t kIpv4TtlOffset = 8;
inline constexpr size_t kIpv4ProtoOffset = 9;
inline constexpr size_t kIpv4CheckOffset = 10;
inline constexpr size_t kIpv4SrcOffset = 12;  // then the destination: 8 address bytes
inline constexpr uint16_t kIpv4DontFragment = 0x4000;
inline constexpr uint16_t kIpv4MoreFragments = 0x2000;
inline constexpr uint16_t kIpv4FragmentOffsetMask = 0x1fff;
// The largest IP packet IPv4's total length allows (and the kernel's GRO and
// TSO limit for IPv6, gro_max_size 65536 counted from the network header).
inline constexpr uint32_t kMaxIpPacketLen = 0xffff;

// IPv6 (RFC 8200 §3).
inline constexpr size_t kIpv6HeaderLen = 40;
inline constexpr size_t kIpv6PayloadLenOffset = 4;
inline constexpr size_t kIpv6NextHeaderOffset = 6;
inline constexpr size_t kIpv6SrcOffset = 8;  // then the destination: 32 address bytes

inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;

// TCP (RFC 9293 §3.1).
inline constexpr size_t kTcpMinHeaderLen = 20;
inline constexpr size_t kTcpMaxHeaderLen = 60;
inline constexpr size_t kTcpSeqOffset = 4;
inline constexpr size_t kTcpAckOffset = 8;
inline constexpr size_t kTcpDataOffsetOffset = 12;  // header length in words, high nibble
inline constexpr size_t kTcpFlagsOffset = 13;
inline constexpr size_t kTcpWindowOffset = 14;
inline constexpr size_t kTcpCheckOffset = 16;
inline constexpr size_t kTcpUrgentOffset = 18;
inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpAck = 0x10;
inline constexpr uint8_t kTcpUrg = 0x20;
inline constexpr uint8_t kTcpCwr = 0x80;

// UDP (RFC 768).
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kUdpLenOffset = 4;
inline constexpr size_t kUdpCheckOffset = 6;

}  // namespace vnet::packet
