// One TX packet classified as a candidate GRO segment: a private copy of its
// headers (guest memory may change under us, so every decision and every
// patched header comes from this copy) and the fields a run compares.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <span>

#include "packet/wire.hpp"
#include "virtio/net_header.hpp"

namespace vnet::gro {

// The most header bytes a mergeable segment can have (virtio-net header,
// Ethernet, IPv6, TCP with options): the copy we parse and the scratch slot
// a merged frame's header lives in.
inline constexpr size_t kMaxSegmentHeaderLen = sizeof(virtio::NetHeader) + packet::kEthHeaderLen +
                                               packet::kIpv6HeaderLen + packet::kTcpMaxHeaderLen;

enum class SegmentKind : uint8_t { tcp_v4, tcp_v6, udp_v4, udp_v6 };

inline bool is_tcp(SegmentKind k) {
    return k == SegmentKind::tcp_v4 || k == SegmentKind::tcp_v6;
}
inline bool is_ipv4(SegmentKind k) {
    return k == SegmentKind::tcp_v4 || k == SegmentKind::udp_v4;
}

struct SegmentHeader {
    // virtio-net header + Ethernet + IP + TCP/UDP header; only the first
    // header_len bytes are meaningful.
    std::array<uint8_t, kMaxSegmentHeaderLen> bytes{};
    SegmentKind kind = SegmentKind::tcp_v4;
    uint8_t vnet_len = 0;
    uint8_t l3_offset = 0;  // from the start of `bytes` (i.e. counting the vnet header)
    uint8_t l4_offset = 0;
    uint8_t header_len = 0;  // vnet + L2 + L3 + L4 header bytes
    bool push = false;       // TCP PSH: this segment ends a merged frame
    uint16_t payload_len = 0;
    uint16_t ip_id = 0;    // IPv4 only
    uint32_t tcp_seq = 0;  // TCP only

    const uint8_t* l3() const { return bytes.data() + l3_offset; }
    const uint8_t* l4() const { return bytes.data() + l4_offset; }
    uint16_t l4_header_len() const { return static_cast<uint16_t>(header_len - l4_offset); }
};

// Copies and checks the headers of one packet (`len` bytes, vnet header
// included, over `iovs`). Returns true only for a packet that is clearly a
// plain segment a GSO frame can reproduce byte for byte; false means "pass
// it through untouched". Reads at most kMaxSegmentHeaderLen bytes and never
// past `len`; trusts no length field in the packet.
bool parse_segment(std::span<const iovec> iovs, uint32_t len, uint8_t vnet_len, SegmentHeader& seg);

// A cheap necessary condition for parse_segment() accepting the packet as
// a TCP (with `tcp`) or UDP (with `udp`) segment: looks only at the vnet
// header's flags and GSO type, the ethertype, the IP version and the IP
// protocol, read in place (each byte once, within `iovs`), copying nothing.
// False means "pass it through": most small packets (UDP with gro_udp off,
// no checksum offload, not IP) are refused here for a few loads instead of
// a header copy and two checksums. True decides nothing: the guest may change
// the bytes, so parse_segment() checks its own copy from scratch.
bool may_be_segment(std::span<const iovec> iovs, uint32_t len, uint8_t vnet_len, bool tcp,
                    bool udp);

// True when `next` carries the same flow and the same per-frame header bytes
// as the run's `head`, i.e. every byte a GSO split copies from the head's
// header is what `next` has. Sequence, IP ID, lengths and PSH are the run's
// business (they change per segment).
bool same_flow_and_shape(const SegmentHeader& head, const SegmentHeader& next);

}  // namespace vnet::gro
