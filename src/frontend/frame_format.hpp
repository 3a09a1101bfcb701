// The frames vnet-pktgen sends and recognises: Ethernet II / IPv4 (no
// options) / UDP, or / TCP for GSO frames, followed by a 16-byte stamp
// (magic, sequence number) and a fixed byte pattern. Offsets and constants
// only; the builder and the verifier share them so they cannot disagree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "packet/wire.hpp"

namespace vnet::frontend {

using packet::MacAddress;

// The generic wire vocabulary, used unqualified by the builder and verifier.
using packet::kEtherTypeIpv4;
using packet::kEthHeaderLen;
using packet::kIpProtoTcp;
using packet::kIpProtoUdp;
using packet::kIpv4HeaderLen;
using packet::kTcpCheckOffset;
using packet::kUdpHeaderLen;

// Our TCP frames carry no options.
inline constexpr size_t kTcpHeaderLen = packet::kTcpMinHeaderLen;
inline constexpr size_t kStampLen = 16;  // u64 magic, u64 sequence (little-endian)

inline constexpr size_t kIpOffset = kEthHeaderLen;
inline constexpr size_t kL4Offset = kIpOffset + kIpv4HeaderLen;
inline constexpr size_t kUdpPayloadOffset = kL4Offset + kUdpHeaderLen;  // 42
inline constexpr size_t kTcpPayloadOffset = kL4Offset + kTcpHeaderLen;  // 54

// "VNETPGEN" read as a little-endian u64: marks our frames among foreign
// traffic (testpmd txonly frames carry no stamp).
inline constexpr uint64_t kStampMagic = 0x4e45475054454e56ull;

// Ethernet minimum without FCS; the largest UDP frame is a 9000-byte MTU
// plus Ethernet and a VLAN tag; a GSO frame is bounded by the IPv4 total
// length field.
inline constexpr uint32_t kMinFrameLen = packet::kEthMinFrameLen;
inline constexpr uint32_t kMaxUdpFrameLen = 9000 + kEthHeaderLen + packet::kVlanTagLen;
inline constexpr uint32_t kMaxGsoFrameLen = kEthHeaderLen + packet::kMaxIpPacketLen;
static_assert(kUdpPayloadOffset + kStampLen <= kMinFrameLen);

// The payload byte at `offset` from the start of the L4 payload (offsets
// below kStampLen hold the stamp). Independent of the sequence number so
// buffers can be filled once at start-up; the stamp carries what changes.
constexpr uint8_t pattern_byte(size_t offset) {
    return static_cast<uint8_t>((offset * 7 + 0x5a) & 0xff);
}

}  // namespace vnet::frontend
