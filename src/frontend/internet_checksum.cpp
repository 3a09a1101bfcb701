#include "frontend/internet_checksum.hpp"

namespace vnet::frontend {

uint32_t checksum_add(uint32_t sum, const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    uint64_t acc = sum;
    size_t i = 0;
    for (; i + 1 < len; i += 2) {
        acc += static_cast<uint32_t>(p[i]) << 8 | p[i + 1];
    }
    if (i < len) {
        acc += static_cast<uint32_t>(p[i]) << 8;
    }
    while (acc >> 32) {
        acc = (acc & 0xffffffffu) + (acc >> 32);
    }
    return static_cast<uint32_t>(acc);
}

uint16_t checksum_fold(uint32_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(sum);
}

}  // namespace vnet::frontend
