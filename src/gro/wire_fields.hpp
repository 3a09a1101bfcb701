// Field access for header bytes copied out of a packet: big-endian for the
// wire headers, little-endian for the virtio-net header (virtio 1.2 §5.1.6:
// with VERSION_1 its fields are little-endian; legacy 10-byte headers are
// guest-endian, which is little-endian on every host vnetd runs on).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnet::gro {

inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kIpv4HeaderLen = 20;  // ihl == 5: options are never merged
inline constexpr size_t kIpv6HeaderLen = 40;
inline constexpr size_t kTcpMinHeaderLen = 20;
inline constexpr size_t kTcpMaxHeaderLen = 60;
inline constexpr size_t kUdpHeaderLen = 8;
inline constexpr size_t kMaxVnetHeaderLen = 12;
// The most header bytes a mergeable segment can have: the copy we parse and
// the scratch slot a merged frame's header lives in.
inline constexpr size_t kMaxSegmentHeaderLen =
    kMaxVnetHeaderLen + kEthHeaderLen + kIpv6HeaderLen + kTcpMaxHeaderLen;

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr size_t kTcpCheckOffset = 16;
inline constexpr size_t kUdpCheckOffset = 6;

// TCP flag bits (the byte at offset 13 of the TCP header).
inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpPsh = 0x08;
inline constexpr uint8_t kTcpUrg = 0x20;
inline constexpr uint8_t kTcpCwr = 0x80;

// virtio_net_hdr field offsets.
inline constexpr size_t kVnetFlags = 0;
inline constexpr size_t kVnetGsoType = 1;
inline constexpr size_t kVnetHdrLen = 2;
inline constexpr size_t kVnetGsoSize = 4;
inline constexpr size_t kVnetCsumStart = 6;
inline constexpr size_t kVnetCsumOffset = 8;

inline uint16_t load_be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t load_be32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
inline uint16_t load_le16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] | p[1] << 8);
}
inline void store_be16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void store_le16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}

}  // namespace vnet::gro
