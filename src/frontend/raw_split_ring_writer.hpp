// RawSplitRingWriter: direct, index-by-index access to the driver-owned
// fields of a split ring (virtio 1.2 §2.7), over the same DriverRingLayout
// that DriverSplitRing drives. It is for writing what a driver never would:
// heads of our choosing, chains with loops or bad flags, avail->idx jumps,
// a used->idx the device did not write. DriverSplitRing cannot express these
// (it only writes well-formed chains from its own free list), so tests of the
// device's checks and the hostile front end use this instead of a ring of
// their own.
//
// No bookkeeping: it never reads back what it wrote. Do not drive a ring
// with both this and a DriverSplitRing; the latter's books would be wrong.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "frontend/driver_ring_layout.hpp"

namespace vnet::frontend {

class RawSplitRingWriter {
public:
    explicit RawSplitRingWriter(const DriverRingLayout& layout) : l_(layout) {}

    const DriverRingLayout& layout() const { return l_; }
    uint16_t size() const { return l_.size; }

    // The descriptor table, any entry, any content.
    virtio::VirtqDesc& desc(uint16_t index) { return l_.desc[index]; }
    void set_desc(uint16_t index, uint64_t addr, uint32_t len, uint16_t flags = 0,
                  uint16_t next = 0) {
        l_.desc[index] = virtio::VirtqDesc{addr, len, flags, next};
    }

    // avail ring (§2.7.6): put `head` in the next slot and publish it with a
    // release store of avail->idx, as a driver's virtqueue_add + kick does.
    void make_available(uint16_t head) {
        const uint16_t idx = avail_idx();
        set_avail_entry(idx, head);
        set_avail_idx(static_cast<uint16_t>(idx + 1));
    }
    void set_avail_entry(uint16_t position, uint16_t head) {
        l_.avail->ring[position & (l_.size - 1)] = head;
    }
    uint16_t avail_idx() const {
        return std::atomic_ref<uint16_t>(l_.avail->idx).load(std::memory_order_relaxed);
    }
    void set_avail_idx(uint16_t idx) {
        std::atomic_ref<uint16_t>(l_.avail->idx).store(idx, std::memory_order_release);
    }
    void set_avail_flags(uint16_t flags) { l_.avail->flags = flags; }
    // used_event lives after avail->ring[size] (§2.7.10).
    void set_used_event(uint16_t value) { l_.avail->ring[l_.size] = value; }

    // The device-written side, read (and, to fake a device, written) raw.
    uint16_t used_idx() const {
        return std::atomic_ref<uint16_t>(l_.used->idx).load(std::memory_order_acquire);
    }
    void set_used_idx(uint16_t idx) { l_.used->idx = idx; }
    uint16_t used_flags() const { return l_.used->flags; }
    virtio::VirtqUsedElem used_elem(uint16_t slot) const {
        return l_.used->ring[slot & (l_.size - 1)];
    }
    // avail_event lives after used->ring[size] (§2.7.10).
    uint16_t avail_event() const {
        uint16_t value;
        std::memcpy(&value, &l_.used->ring[l_.size], sizeof value);
        return value;
    }

private:
    DriverRingLayout l_;
};

}  // namespace vnet::frontend
