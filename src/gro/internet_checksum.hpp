// RFC 1071 one's-complement sums for the IPv4 header checksum and the TCP/UDP
// pseudo header. Header-only: they run per packet on ~20-40 bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gro/wire_fields.hpp"

namespace vnet::gro {

// Adds big-endian 16-bit words (an odd trailing byte is padded with zero).
inline uint32_t checksum_add(uint32_t sum, const uint8_t* p, size_t len) {
    size_t i = 0;
    for (; i + 1 < len; i += 2) {
        sum += load_be16(p + i);
    }
    if (i < len) {
        sum += uint32_t{p[i]} << 8;
    }
    return sum;
}

// Folds the carries into 16 bits, not complemented. A non-zero sum folds to
// 1..0xffff, as the kernel's csum_fold does before its final complement.
inline uint16_t checksum_fold(uint32_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(sum);
}

// The pseudo-header sum for an L4 segment of `l4_len` bytes (RFC 793 /
// RFC 8200 §8.1). `l3` points at the IP header. Its fold is what a
// CHECKSUM_PARTIAL skb (virtio NEEDS_CSUM) carries in the L4 check field:
// the device adds the L4 bytes from csum_start and complements.
inline uint32_t pseudo_header_sum(const uint8_t* l3, bool ipv4, uint8_t proto, uint32_t l4_len) {
    uint32_t sum = ipv4 ? checksum_add(0, l3 + 12, 8) : checksum_add(0, l3 + 8, 32);
    return sum + proto + (l4_len >> 16) + (l4_len & 0xffff);
}

}  // namespace vnet::gro
