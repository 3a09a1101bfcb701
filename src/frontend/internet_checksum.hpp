// RFC 1071 one's-complement checksum over big-endian 16-bit words, as used
// by IPv4 headers and the TCP/UDP pseudo header.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnet::frontend {

// Adds `len` bytes to a running 32-bit sum (an odd trailing byte is padded
// with zero, RFC 1071 §4.1).
uint32_t checksum_add(uint32_t sum, const void* data, size_t len);

// Folds the carries into 16 bits (not complemented).
uint16_t checksum_fold(uint32_t sum);

// The final field value: ~fold(sum), in host order (store it big-endian).
inline uint16_t checksum_finish(uint32_t sum) {
    return static_cast<uint16_t>(~checksum_fold(sum));
}

}  // namespace vnet::frontend
