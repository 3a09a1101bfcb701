// Test-only builders: well-formed TCP/UDP segments as a guest sends them
// (virtio-net header first, lengths and checksums right), and bursts whose
// packets are split over iovecs at chosen points, each piece its own heap
// block so ASan sees any read past an iovec.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "gso_segmenter.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::gro::testing {

inline constexpr uint8_t kTcpAck = 0x10;
inline constexpr uint8_t kTcpPshFlag = 0x08;

struct SegmentSpec {
    bool ipv6 = false;
    bool udp = false;
    uint8_t vnet_len = 12;
    bool data_valid = false;  // DATA_VALID + full checksum instead of NEEDS_CSUM + pseudo sum
    uint16_t hdr_len_hint = 0;
    uint16_t gso_size_hint = 0;
    uint16_t num_buffers = 0;
    std::array<uint8_t, 6> dst_mac{0x52, 0x54, 0, 0, 0, 1};
    std::array<uint8_t, 6> src_mac{0x52, 0x54, 0, 0, 0, 2};
    uint8_t addr_tag = 1;  // last byte of the source address
    uint16_t src_port = 40000;
    uint16_t dst_port = 5201;
    uint32_t seq = 1000;
    uint32_t ack = 77;
    uint16_t window = 512;
    uint8_t tcp_flags = kTcpAck;
    std::vector<uint8_t> tcp_options;  // a multiple of 4 bytes
    uint16_t ip_id = 1;
    uint8_t tos = 0;
    uint8_t ttl = 64;
    bool dont_fragment = true;
    uint32_t flow_label = 0x12345;
    size_t payload_len = 100;
    uint32_t payload_seed = 0;
};

// The 12 option bytes a Linux sender puts on every segment (NOP NOP TS).
std::vector<uint8_t> timestamp_options(uint32_t tsval, uint32_t tsecr);

Bytes build_segment(const SegmentSpec& spec);

// Header offsets of a built segment.
inline size_t l3_offset(const SegmentSpec& s) {
    return s.vnet_len + 14u;
}
inline size_t l4_offset(const SegmentSpec& s) {
    return l3_offset(s) + (s.ipv6 ? 40u : 20u);
}

// Owns packet bytes and the packet::PacketBurst that points at them.
class TestBurst {
public:
    TestBurst() : burst_(std::make_unique<packet::PacketBurst>()) {}
    // Adds `bytes` split at the given offsets (sorted, may repeat: a repeat
    // makes an empty iovec). `len` overrides the packet's length field.
    void add(const Bytes& bytes, std::vector<size_t> splits = {}, uint32_t token = 0);
    void add_with_len(const Bytes& bytes, std::vector<size_t> splits, uint32_t token, uint32_t len);
    const packet::PacketBurst& burst() const { return *burst_; }
    packet::PacketBurst& mutable_burst() { return *burst_; }
    // True when [p, p+n) lies inside one piece this burst owns.
    bool owns(const void* p, size_t n) const;

private:
    std::unique_ptr<packet::PacketBurst> burst_;
    std::vector<std::unique_ptr<uint8_t[]>> pieces_;
    std::vector<std::pair<const uint8_t*, size_t>> ranges_;
};

// The bytes of frame `i` of `burst`, its iovecs concatenated.
Bytes frame_bytes(const packet::PacketBurst& burst, uint16_t i);

}  // namespace vnet::gro::testing
