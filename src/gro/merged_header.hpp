// The header of a merged GSO frame: the run head's header, patched so that
// the kernel's GSO split of the frame gives back the run's segments.
#pragma once

#include <cstdint>

#include "gro/segment_header.hpp"

namespace vnet::gro {

// Writes head.header_len bytes to `dst`: the head's header with the virtio
// header turned into a GSO request (NEEDS_CSUM, TCPV4/TCPV6/UDP_L4,
// gso_size = head payload), IP and UDP lengths for `payload_bytes` of
// payload, the IPv4 header checksum recomputed, the L4 check set to the
// pseudo-header sum a CHECKSUM_PARTIAL skb carries, and PSH added when the
// last segment had it.
void write_merged_header(const SegmentHeader& head, uint32_t payload_bytes, bool last_push,
                         uint8_t* dst);

}  // namespace vnet::gro
