#include "frontend/driver_packed_ring_layout.hpp"

#include <cstring>
#include <stdexcept>

#include "frontend/driver_memory.hpp"
#include "frontend/driver_ring_layout.hpp"

namespace vnet::frontend {
namespace {

size_t align_up(size_t v) {
    return (v + kRingAreaAlign - 1) & ~(kRingAreaAlign - 1);
}

}  // namespace

size_t packed_ring_storage_bytes(uint16_t size) {
    return align_up(virtio::packed_desc_ring_bytes(size)) + 2 * kRingAreaAlign;
}

DriverPackedRingLayout carve_packed_ring_layout(std::span<std::byte> storage, uint16_t size) {
    if (!virtio::is_valid_packed_queue_size(size)) {
        throw std::invalid_argument("packed queue size must be in 1..32768");
    }
    const size_t total = packed_ring_storage_bytes(size);
    if (storage.size() < total ||
        reinterpret_cast<uintptr_t>(storage.data()) % kRingAreaAlign != 0) {
        throw std::invalid_argument("ring storage too small or misaligned");
    }
    std::memset(storage.data(), 0, total);
    std::byte* base = storage.data();
    const size_t events = align_up(virtio::packed_desc_ring_bytes(size));
    return DriverPackedRingLayout{
        .desc = reinterpret_cast<virtio::PackedDesc*>(base),
        .driver_event = reinterpret_cast<virtio::PackedEventSuppress*>(base + events),
        .device_event =
            reinterpret_cast<virtio::PackedEventSuppress*>(base + events + kRingAreaAlign),
        .size = size,
    };
}

DriverPackedRingLayout allocate_packed_ring_layout(DriverMemory& memory, uint16_t size) {
    return carve_packed_ring_layout(
        memory.allocate(packed_ring_storage_bytes(size), kRingAreaAlign), size);
}

}  // namespace vnet::frontend
