// Unaligned big-endian (network order) and little-endian field access for
// frame bytes. memcpy keeps it free of alignment and aliasing traps; the
// compiler turns it into one load/store plus a byte swap.
#pragma once

#include <cstdint>
#include <cstring>

namespace vnet::frontend {

// std::byteswap is C++23; the builtins exist in both g++ and clang.
inline uint16_t bswap(uint16_t v) {
    return __builtin_bswap16(v);
}
inline uint32_t bswap(uint32_t v) {
    return __builtin_bswap32(v);
}

inline void store_be16(std::byte* p, uint16_t v) {
    v = bswap(v);
    std::memcpy(p, &v, sizeof v);
}
inline void store_be32(std::byte* p, uint32_t v) {
    v = bswap(v);
    std::memcpy(p, &v, sizeof v);
}
inline void store_le64(std::byte* p, uint64_t v) {
    std::memcpy(p, &v, sizeof v);
}

inline uint16_t load_be16(const std::byte* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return bswap(v);
}
inline uint64_t load_le64(const std::byte* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace vnet::frontend
