// Where the three areas of one driver-side packed virtqueue live (virtio 1.2
// §2.8.10.1: descriptor ring 16-aligned, the two event areas 4), carved out
// of memory we own. Each area starts on its own cache line, so the area the
// device writes (device event) never shares a line with ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "frontend/driver_ring_layout.hpp"  // kRingAreaAlign
#include "virtio/ring/packed_layout.hpp"

namespace vnet::frontend {

class DriverMemory;

struct DriverPackedRingLayout {
    virtio::PackedDesc* desc = nullptr;
    virtio::PackedEventSuppress* driver_event = nullptr;  // we write it (call suppression)
    virtio::PackedEventSuppress* device_event = nullptr;  // the device writes it (kicks)
    uint16_t size = 0;                                    // 1..32768, any value
};

// Bytes needed by carve_packed_ring_layout for a queue of `size` entries.
size_t packed_ring_storage_bytes(uint16_t size);

// Lays the ring out in `storage` (64-byte aligned, at least
// packed_ring_storage_bytes(size) long) and zeroes it: a zeroed descriptor
// is neither available nor used for wrap counter 1 (§2.8.13). Throws
// std::invalid_argument for a bad size or short/misaligned storage.
DriverPackedRingLayout carve_packed_ring_layout(std::span<std::byte> storage, uint16_t size);

// Same, with storage from guest memory (so the back end can see it).
DriverPackedRingLayout allocate_packed_ring_layout(DriverMemory& memory, uint16_t size);

}  // namespace vnet::frontend
