// A ring's three areas as the front end places them, before there is a
// ring: vhost-user's SET_VRING_ADDR gives the descriptor area, the driver
// area (split: the avail ring; packed: the driver event suppression area)
// and the device area (the used ring; the device event suppression area)
// as its own virtual addresses. Each ring model says how big and how
// aligned its areas are, translates them into a Layout, and names the areas
// it writes (which dirty logging must cover), so the device handling the
// messages never names a format.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "virtio/guest_memory.hpp"

namespace vnet::virtio {

enum class RingArea : uint8_t { desc, driver, device };

struct RingAddresses {
    uint64_t desc = 0;
    uint64_t driver = 0;
    uint64_t device = 0;
};

// Each area's alignment (virtio 1.2 §2.7 "Virtqueue Part Alignment", §2.8.10.1).
struct AreaAlignment {
    uint64_t desc = 1;
    uint64_t driver = 1;
    uint64_t device = 1;
};

// An area the device writes, `bytes` long for the ring's size.
// `at_log_address`: vhost-user's SET_VRING_ADDR log_guest_addr (LOG flag)
// names where it is logged (the split used ring), instead of where it lies.
struct WrittenArea {
    RingArea area = RingArea::device;
    uint64_t bytes = 0;
    bool at_log_address = false;
};
struct WrittenAreas {
    std::array<WrittenArea, 2> items{};
    size_t count = 0;
    std::span<const WrittenArea> view() const { return {items.data(), count}; }
};

// The host address of `address` mapped for `bytes`, wholly inside one
// region (CVE-2018-1059 class) and aligned there too: the front end's
// alignment holds for its addresses, but a region mapped at another offset
// modulo the alignment would misalign ours. Null: refuse the ring.
inline uint8_t* translate_area(const GuestMemoryMap& memory, uint64_t address, uint64_t bytes,
                               uint64_t align) {
    uint8_t* host = memory.uva_to_host(address, bytes);
    if (host == nullptr || reinterpret_cast<uintptr_t>(host) % align != 0) {
        return nullptr;
    }
    return host;
}

}  // namespace vnet::virtio
