// The pages a dirty-log bitmap has marked (bit n % 8 of byte n / 8): what
// the dirty-log tests compare against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

namespace vnet::virtio::test {

inline std::set<uint64_t> marked_pages(const uint8_t* bitmap, size_t bytes) {
    std::set<uint64_t> pages;
    for (size_t byte = 0; byte < bytes; ++byte) {
        for (unsigned bit = 0; bit < 8; ++bit) {
            if ((bitmap[byte] >> bit) & 1u) {
                pages.insert(byte * 8 + bit);
            }
        }
    }
    return pages;
}

}  // namespace vnet::virtio::test
