// Unaligned field access for packet bytes: big-endian (network order) for
// the wire headers, little-endian for the virtio-net header (virtio 1.2
// §5.1.6: with VERSION_1 its fields are little-endian; legacy 10-byte headers
// are guest-endian, which is little-endian on every host vnetd runs on).
// memcpy keeps it free of alignment and aliasing traps; the compiler turns
// each into one load or store plus a byte swap. The pointers are void so the
// same helpers serve uint8_t and std::byte buffers.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace vnet::packet {

static_assert(std::endian::native == std::endian::little, "vnetd assumes a little-endian host");

inline uint16_t load_be16(const void* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap16(v);
}
inline uint32_t load_be32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap32(v);
}
inline uint16_t load_le16(const void* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline uint64_t load_le64(const void* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void store_be16(void* p, uint16_t v) {
    v = __builtin_bswap16(v);
    std::memcpy(p, &v, sizeof v);
}
inline void store_be32(void* p, uint32_t v) {
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof v);
}
inline void store_le16(void* p, uint16_t v) {
    std::memcpy(p, &v, sizeof v);
}
inline void store_le64(void* p, uint64_t v) {
    std::memcpy(p, &v, sizeof v);
}

}  // namespace vnet::packet
