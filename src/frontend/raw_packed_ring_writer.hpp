// RawPackedRingWriter: direct, slot-by-slot writes into a packed ring's
// descriptors (virtio 1.2 §2.8), over the same DriverPackedRingLayout that
// DriverPackedRing drives. It is for what a driver never writes: ids out of
// range, stale wrap bits, chains as long as the ring, flags of our choosing.
// DriverPackedRing only writes well-formed chains, so tests of the device's
// checks and the hostile front end use this rather than a ring of their own.
//
// No bookkeeping: do not drive a ring with both this and a DriverPackedRing
// unless the test means to break the latter's books.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "frontend/driver_packed_ring_layout.hpp"

namespace vnet::frontend {

class RawPackedRingWriter {
public:
    explicit RawPackedRingWriter(const DriverPackedRingLayout& layout) : l_(layout) {}

    const DriverPackedRingLayout& layout() const { return l_; }
    uint16_t size() const { return l_.size; }
    virtio::PackedDesc& desc(uint16_t slot) { return l_.desc[slot]; }

    // Slot `slot` as the driver makes it available for wrap counter `wrap`
    // (§2.8.21.1): `flags` plus the AVAIL/USED bits of that lap.
    void put(uint16_t slot, uint64_t addr, uint32_t len, uint16_t id, uint16_t flags = 0,
             bool wrap = true) {
        l_.desc[slot] = virtio::PackedDesc{
            addr, len, id, static_cast<uint16_t>(flags | virtio::avail_flags_for(wrap))};
    }
    // Only the flags, exactly as given (no AVAIL/USED bits added).
    void put_raw_flags(uint16_t slot, uint16_t flags) { l_.desc[slot].flags = flags; }

    // Writes `chain` into consecutive slots from `head` (wrapping), each
    // with its own flags as given, the head's flags last with release, as a
    // driver exposes a chain (§2.8.21.1.1).
    void publish_chain(virtio::PackedPosition head, std::span<const virtio::PackedDesc> chain) {
        virtio::PackedPosition pos = head;
        for (size_t i = 0; i < chain.size(); ++i) {
            virtio::PackedDesc& d = l_.desc[pos.index];
            d.addr = chain[i].addr;
            d.len = chain[i].len;
            d.id = chain[i].id;
            if (i != 0) {
                d.flags = chain[i].flags;
            }
            pos = virtio::advance(pos, 1, l_.size);
        }
        if (!chain.empty()) {
            std::atomic_ref<uint16_t>(l_.desc[head.index].flags)
                .store(chain[0].flags, std::memory_order_release);
        }
    }

private:
    DriverPackedRingLayout l_;
};

}  // namespace vnet::frontend
