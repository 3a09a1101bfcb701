// Where the three areas of one driver-side split virtqueue live, and how to
// carve them out of memory we own (virtio 1.2 §2.7, "Virtqueue Part
// Alignment": desc 16, avail 2, used 4). Each area starts on its own cache
// line so that the driver-written areas (desc, avail) never share a line
// with the device-written one (used).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "frontend/ring_layout_import.hpp"

namespace vnet::frontend {

class DriverMemory;

struct DriverRingLayout {
    virtio::VirtqDesc* desc = nullptr;
    virtio::VirtqAvail* avail = nullptr;
    virtio::VirtqUsed* used = nullptr;
    uint16_t size = 0;  // a power of two, <= 32768
};

inline constexpr size_t kRingAreaAlign = 64;

// Bytes needed by carve_ring_layout for a queue of `size` entries.
size_t ring_storage_bytes(uint16_t size);

// Lays the rings out in `storage` (which must be kRingAreaAlign-aligned and
// at least ring_storage_bytes(size) long) and zeroes them. Throws
// std::invalid_argument for a bad size or short/misaligned storage.
DriverRingLayout carve_ring_layout(std::span<std::byte> storage, uint16_t size);

// Same, with storage from guest memory (so the back end can see it).
DriverRingLayout allocate_ring_layout(DriverMemory& memory, uint16_t size);

}  // namespace vnet::frontend
