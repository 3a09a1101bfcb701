// The VXLAN header on the wire (RFC 7348 §5), for the user-space VXLAN
// datapath (vxlan_send_batch.hpp, vxlan_receive_batch.hpp): what vnetd puts
// in front of an inner Ethernet frame in a UDP datagram, and what it checks
// in one that arrives. Pure: no system calls.
//
//   byte 0     flags: 0x08 = I (the VNI is valid); the other bits reserved
//   bytes 1-3  reserved
//   bytes 4-6  VNI, 24 bits, network order
//   byte 7     reserved
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace vnet::ports {

inline constexpr size_t kVxlanHeaderSize = 8;
inline constexpr uint8_t kVxlanFlagVni = 0x08;  // RFC 7348 §5: the I flag
inline constexpr uint32_t kVxlanMaxVni = 0xffffff;
// IANA's VXLAN port (RFC 7348 §5, "Outer UDP Header").
inline constexpr uint16_t kVxlanUdpPort = 4789;

// The smallest inner frame worth decapsulating: an Ethernet header.
inline constexpr size_t kVxlanMinInnerFrame = 14;

// What encapsulation adds to an inner frame on the underlay, outer Ethernet
// header included (no VLAN tag): Ethernet 14 + IP + UDP 8 + VXLAN 8. An
// underlay MTU of M carries inner frames of M + 14 - overhead bytes.
inline constexpr size_t kVxlanOverheadIpv4 = 14 + 20 + 8 + kVxlanHeaderSize;
inline constexpr size_t kVxlanOverheadIpv6 = 14 + 40 + 8 + kVxlanHeaderSize;
static_assert(kVxlanOverheadIpv4 == 50 && kVxlanOverheadIpv6 == 70);

using VxlanHeader = std::array<uint8_t, kVxlanHeaderSize>;

// RFC 7348 §5: the I flag set, every reserved bit zero on send. `vni` is
// taken modulo 2^24 (the caller checks its range where it is configured).
constexpr VxlanHeader make_vxlan_header(uint32_t vni) {
    return VxlanHeader{kVxlanFlagVni,
                       0,
                       0,
                       0,
                       static_cast<uint8_t>(vni >> 16),
                       static_cast<uint8_t>(vni >> 8),
                       static_cast<uint8_t>(vni),
                       0};
}

// RFC 7348 §5: a receiver ignores the reserved bits, so only the I flag
// and the VNI are read. `h` holds kVxlanHeaderSize bytes.
constexpr bool vxlan_vni_flag_set(const uint8_t* h) {
    return (h[0] & kVxlanFlagVni) != 0;
}
constexpr uint32_t vxlan_vni(const uint8_t* h) {
    return uint32_t{h[4]} << 16 | uint32_t{h[5]} << 8 | uint32_t{h[6]};
}

}  // namespace vnet::ports
