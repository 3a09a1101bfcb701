// Test-only reference: splits a virtio-net GSO frame the way the kernel's
// tcp_gso_segment / __udp_gso_segment (with inet/ipv6 gso_segment around
// them) do for a CHECKSUM_PARTIAL skb, and writes each segment back as the
// virtio-net packet a guest would have sent. Written from the kernel's rules,
// independently of src/gro, so the two can be checked against each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "packet/wire.hpp"

namespace vnet::gro::testing {

using Bytes = std::vector<uint8_t>;

// RFC 1071 sum of big-endian words (independent of src/gro).
uint32_t ref_checksum_add(uint32_t sum, const uint8_t* p, size_t len);
uint16_t ref_checksum_fold(uint32_t sum);

// Splits `frame` (virtio-net header of `vnet_len` bytes first). Per segment:
// TCP seq advances by gso_size, IPv4 ID by one, PSH and FIN stay on the last
// segment only (CWR on the first), IPv4 tot_len / IPv6 payload_len / UDP
// length are the segment's, the IPv4 header checksum is recomputed, the L4
// check is the folded pseudo-header sum for the segment's L4 length, and the
// virtio header becomes NEEDS_CSUM, GSO_NONE, hdr_len 0, gso_size 0 (same
// csum_start, csum_offset, num_buffers). A frame with gso_type NONE comes
// back as itself. Returns {} for a frame it cannot split (malformed).
std::vector<Bytes> gso_segment(std::span<const uint8_t> frame, size_t vnet_len);

// Turns a NEEDS_CSUM packet into the DATA_VALID packet the device would
// deliver: completes the L4 checksum from csum_start and clears
// csum_start/csum_offset. Other packets are returned unchanged.
Bytes complete_checksum(Bytes packet, size_t vnet_len);

}  // namespace vnet::gro::testing
