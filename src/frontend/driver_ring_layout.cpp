#include "frontend/driver_ring_layout.hpp"

#include <cstring>
#include <stdexcept>

#include "frontend/driver_memory.hpp"

namespace vnet::frontend {
namespace {

size_t align_up(size_t v) {
    return (v + kRingAreaAlign - 1) & ~(kRingAreaAlign - 1);
}

struct Offsets {
    size_t avail;
    size_t used;
    size_t total;
};

Offsets offsets_for(uint16_t size) {
    const size_t avail = align_up(virtio::desc_table_bytes(size));
    const size_t used = avail + align_up(virtio::avail_ring_bytes(size));
    return {avail, used, used + align_up(virtio::used_ring_bytes(size))};
}

}  // namespace

size_t ring_storage_bytes(uint16_t size) {
    return offsets_for(size).total;
}

DriverRingLayout carve_ring_layout(std::span<std::byte> storage, uint16_t size) {
    if (!virtio::is_valid_split_queue_size(size)) {
        throw std::invalid_argument("queue size must be a power of two in 1..32768");
    }
    const Offsets off = offsets_for(size);
    if (storage.size() < off.total ||
        reinterpret_cast<uintptr_t>(storage.data()) % kRingAreaAlign != 0) {
        throw std::invalid_argument("ring storage too small or misaligned");
    }
    std::memset(storage.data(), 0, off.total);
    std::byte* base = storage.data();
    return DriverRingLayout{
        .desc = reinterpret_cast<virtio::VirtqDesc*>(base),
        .avail = reinterpret_cast<virtio::VirtqAvail*>(base + off.avail),
        .used = reinterpret_cast<virtio::VirtqUsed*>(base + off.used),
        .size = size,
    };
}

DriverRingLayout allocate_ring_layout(DriverMemory& memory, uint16_t size) {
    return carve_ring_layout(memory.allocate(ring_storage_bytes(size), kRingAreaAlign), size);
}

}  // namespace vnet::frontend
