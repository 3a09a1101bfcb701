// The device half of a split ring, written as plainly as possible, for
// driving DriverSplitRing in tests without a back end. Not shared with
// virtio/split_ring: the tests check the driver against the spec, not
// against our own device code.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "frontend/driver_ring_layout.hpp"

namespace vnet::frontend::testing {

class FakeDeviceRing {
public:
    explicit FakeDeviceRing(const DriverRingLayout& layout, uint16_t start_index = 0)
        : l_(layout), last_avail_(start_index), used_idx_(start_index) {}

    uint16_t avail_idx() const {
        return std::atomic_ref<uint16_t>(l_.avail->idx).load(std::memory_order_acquire);
    }
    uint16_t avail_flags() const { return l_.avail->flags; }
    uint16_t used_event() const { return l_.avail->ring[l_.size]; }
    void set_avail_event(uint16_t v) {
        std::memcpy(&l_.used->ring[l_.size], &v, sizeof v);  // the u16 after ring[size]
    }
    void set_used_flags(uint16_t v) { l_.used->flags = v; }

    // Heads published since the last call.
    std::vector<uint16_t> pop_avail() {
        std::vector<uint16_t> heads;
        const uint16_t end = avail_idx();
        while (last_avail_ != end) {
            heads.push_back(l_.avail->ring[last_avail_ & (l_.size - 1)]);
            ++last_avail_;
        }
        return heads;
    }
    const virtio::VirtqDesc& desc(uint16_t i) const { return l_.desc[i]; }

    void push_used(uint32_t id, uint32_t len) {
        l_.used->ring[used_idx_ & (l_.size - 1)] = virtio::VirtqUsedElem{id, len};
        ++used_idx_;
    }
    void publish_used() {
        std::atomic_ref<uint16_t>(l_.used->idx).store(used_idx_, std::memory_order_release);
    }
    // Sets used->idx directly, e.g. to claim more than was handed out.
    void force_used_idx(uint16_t v) { l_.used->idx = v; }

private:
    DriverRingLayout l_;
    uint16_t last_avail_;
    uint16_t used_idx_;
};

}  // namespace vnet::frontend::testing
