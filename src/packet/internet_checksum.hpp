// The internet checksum (RFC 1071): the one's-complement sum of big-endian
// 16-bit words, as IPv4 headers and the TCP/UDP pseudo header use it.
// Header-only: it runs per packet over 8-40 bytes and must inline.
#pragma once

#include <sys/uio.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "packet/byte_order.hpp"
#include "packet/wire.hpp"

namespace vnet::packet {

// Folds the carries into 16 bits, not complemented. A non-zero sum folds to
// 1..0xffff, as the kernel's csum_fold does before its final complement.
constexpr uint16_t checksum_fold(uint64_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(sum);
}

// Adds `len` bytes at `data` to a running sum and returns the sum folded to
// 16 bits (so callers may add lengths and protocol numbers to it without
// overflow). An odd trailing byte is padded with zero (RFC 1071 §4.1), so a
// buffer split at an odd offset must be summed in one call.
//
// Sums the bytes in the machine's order, 16 at a time as four 32-bit
// halves into 64-bit accumulators (no carry is lost below 2^32 words), and
// swaps the folded sum into network order at the end: the one's-complement
// sum is byte-order independent (RFC 1071 §2(B): swapping a word's bytes
// multiplies it by 256 modulo 0xffff, so the swap of the sum is the sum of
// the swaps), and 2^16 ≡ 1, so a 32-bit word adds what its two 16-bit
// halves would. Both sums are zero only for all-zero input, so the fold is
// the same. Twice the speed of a loop of big-endian loads (16.7 against 9.3
// GB/s over 1448 bytes, an Intel host): it runs over every TCP payload a
// VXLAN socket receives and every segment vnetd cuts.
inline uint16_t checksum_add(uint32_t sum, const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    uint64_t a = 0;
    uint64_t b = 0;
    uint64_t c = 0;
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t w0 = 0;
        uint64_t w1 = 0;
        std::memcpy(&w0, p + i, 8);
        std::memcpy(&w1, p + i + 8, 8);
        a += w0 & 0xffffffff;
        b += w0 >> 32;
        c += w1 & 0xffffffff;
        d += w1 >> 32;
    }
    uint64_t acc = a + b + c + d;
    for (; i + 4 <= len; i += 4) {
        uint32_t w = 0;
        std::memcpy(&w, p + i, 4);
        acc += w;
    }
    if (i + 2 <= len) {
        uint16_t w = 0;
        std::memcpy(&w, p + i, 2);
        acc += w;
        i += 2;
    }
    if (i < len) {
        // The odd byte is the first of its word: in the machine's order
        // the word is the byte itself on little-endian, byte << 8 on big.
        acc += std::endian::native == std::endian::little ? uint32_t{p[i]} : uint32_t{p[i]} << 8;
    }
    uint16_t folded = checksum_fold(acc);
    if constexpr (std::endian::native == std::endian::little) {
        folded = __builtin_bswap16(folded);
    }
    return checksum_fold(uint64_t{sum} + folded);
}

// checksum_add over bytes spread over iovecs (a guest's RX buffers), as if
// they were contiguous. A piece that starts at an odd offset adds its own
// sum byte-swapped: the one's-complement sum is byte-order independent
// (RFC 1071 §2(B)), so the swap puts its bytes in the word halves they
// would have had; the kernel's csum_block_add does the same.
inline uint16_t checksum_add_iovecs(uint32_t sum, std::span<const iovec> pieces) {
    uint64_t acc = sum;
    bool odd = false;
    for (const iovec& piece : pieces) {
        if (piece.iov_len == 0) {
            continue;  // an empty piece may have a null base
        }
        const uint16_t part = checksum_add(0, piece.iov_base, piece.iov_len);
        acc += odd ? __builtin_bswap16(part) : part;
        odd ^= (piece.iov_len & 1) != 0;
    }
    return checksum_fold(acc);
}

// The value to store in a checksum field: the complemented fold, in host
// order (store it big-endian).
constexpr uint16_t checksum_finish(uint64_t sum) {
    return static_cast<uint16_t>(~checksum_fold(sum));
}

// The pseudo-header sum for an L4 segment of `l4_len` bytes (RFC 9293
// §3.1 / RFC 8200 §8.1), folded. `l3` points at the IP header. It is what a
// CHECKSUM_PARTIAL skb (virtio NEEDS_CSUM) carries in the L4 check field:
// the device adds the L4 bytes from csum_start and complements.
inline uint16_t pseudo_header_sum(const uint8_t* l3, bool ipv4, uint8_t proto, uint32_t l4_len) {
    const uint32_t sum =
        ipv4 ? checksum_add(0, l3 + kIpv4SrcOffset, 8) : checksum_add(0, l3 + kIpv6SrcOffset, 32);
    return checksum_fold(uint64_t{sum} + proto + (l4_len >> 16) + (l4_len & 0xffff));
}

}  // namespace vnet::packet
