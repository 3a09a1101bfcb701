// PacketBuilder: writes vnet-pktgen's TX frames into packet slots in guest
// memory. A slot is the 12-byte virtio_net_hdr (VERSION_1) followed by the
// frame, handed to the device as one readable descriptor.
//
// The work is split so the TX loop stays cheap: prepare_slot() writes once
// what never changes (addresses, protocol fields, the payload pattern), and
// stamp() writes per packet only what does (sequence number, lengths,
// checksums, GSO fields): a few dozen bytes, no allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "frontend/frame_format.hpp"

namespace vnet::frontend {

struct FlowAddresses {
    MacAddress src_mac{0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    MacAddress dst_mac{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    uint32_t src_ip = 0xc6120001;  // 198.18.0.1 (RFC 2544 benchmark range)
    uint32_t dst_ip = 0xc6120002;  // 198.18.0.2
    uint16_t src_port = 9;         // discard, as testpmd txonly uses
    uint16_t dst_port = 9;
};

enum class FrameKind : uint8_t {
    udp,      // Ethernet/IPv4/UDP, no offloads
    tcp_gso,  // Ethernet/IPv4/TCP with NEEDS_CSUM, and GSO TCPV4 when longer than one MSS
};

class PacketBuilder {
public:
    // Bytes of virtio_net_hdr in front of every frame (VERSION_1 layout).
    static constexpr size_t kNetHeaderLen = 12;

    PacketBuilder(const FlowAddresses& flow, FrameKind kind, uint16_t mss = 1448);

    FrameKind kind() const { return kind_; }
    uint16_t mss() const { return mss_; }
    // Smallest and largest frame (without the virtio header) this kind allows.
    uint32_t min_frame_len() const;
    uint32_t max_frame_len() const;

    // Writes the constant parts into a slot of slot.size() bytes: the slot
    // then holds frames up to slot.size() - kNetHeaderLen bytes.
    void prepare_slot(std::span<std::byte> slot) const;

    // Makes the slot carry frame number `seq` of `frame_len` bytes
    // (min_frame_len()..min(max_frame_len(), slot capacity); the caller
    // checks). Returns the bytes to hand to the device: header + frame.
    uint32_t stamp(std::span<std::byte> slot, uint64_t seq, uint32_t frame_len) const;

private:
    uint32_t stamp_udp(std::byte* frame, uint32_t frame_len) const;
    uint32_t stamp_tcp(std::byte* header, std::byte* frame, uint64_t seq, uint32_t frame_len) const;

    FlowAddresses flow_;
    FrameKind kind_;
    uint16_t mss_;
    uint32_t pseudo_header_base_;  // checksum of the pseudo-header's constant part
};

}  // namespace vnet::frontend
