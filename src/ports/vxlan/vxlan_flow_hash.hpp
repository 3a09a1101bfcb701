// The inner flow's hash that picks a VXLAN datagram's UDP source port
// (its send lane, vxlan_socket_port.hpp). RFC 7348 §5: "it is recommended
// that the UDP source port number be calculated using a hash of fields
// from the inner packet", so that an underlay spreading by 5-tuple (ECMP,
// a receiving NIC's RSS) spreads a host pair's flows, as the kernel's vxlan
// device does (udp_flow_src_port over the inner skb's flow hash).
//
// What is hashed, as far as the frame holds it:
//  * the Ethernet destination and source, and up to two VLAN tags' VIDs
//    (802.1Q, 802.1ad), and the EtherType;
//  * IPv4: the addresses and the protocol, and for TCP, UDP, UDP-Lite and
//    SCTP the ports unless the packet is a fragment (a fragment after the
//    first has no ports, so every fragment of a datagram hashes alike);
//  * IPv6: the addresses and the next header, and the ports when the next
//    header is TCP, UDP, UDP-Lite or SCTP (an extension header, a fragment
//    header among them, ends the walk: addresses only). The flow label is
//    left out: Linux changes it when it re-routes a TCP flow after a
//    timeout, and a flow should keep its lane.
// A frame too short for a header hashes on what came before it. The hash
// reads only [frame, frame + len): hostile bytes choose a lane, nothing more.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnet::ports {

// The frame bytes the hash may read: Ethernet (14), two VLAN tags (8), an
// IPv4 header with options (60) and the ports (4). A caller copies at most
// this much of a frame and hands the copy over.
inline constexpr size_t kVxlanFlowHashBytes = 14 + 8 + 60 + 4;

uint32_t vxlan_inner_flow_hash(const uint8_t* frame, size_t len);

// The lane of `hash` among `lanes` (1..), evenly: the hash's high bits
// scaled, no division.
inline uint16_t vxlan_lane_of(uint32_t hash, uint16_t lanes) {
    return static_cast<uint16_t>((uint64_t{hash} * lanes) >> 32);
}

}  // namespace vnet::ports
