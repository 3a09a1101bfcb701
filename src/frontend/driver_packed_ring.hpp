// DriverPackedRing: the driver (guest) half of a packed virtqueue, virtio 1.2
// §2.8, with the same shape as DriverSplitRing (frontend/driver_ring.hpp). It
// writes chains into consecutive descriptor slots (or one slot naming an
// indirect table), tracks buffer ids and the driver wrap counter, reads the
// used descriptors the device writes back, and honours both event
// suppression areas.
//
// Deliberately separate from the device side (virtio/ring/packed_ring): a
// test peer that shares code with the thing it tests would share its bugs.
// Only the layout types and the position arithmetic are common.
//
// Batching: add_* writes every descriptor of every chain, but the first
// chain's head keeps stale flags until publish(), which stores them last
// (release): the device sees the whole batch at once, the mirror image of
// the device's used-side batching. One owner thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frontend/driver_packed_ring_layout.hpp"
#include "frontend/driver_ring.hpp"

namespace vnet::frontend {

class DriverPackedRing {
public:
    // Both wrap counters start at 1 (§2.8.1); the ring must be zeroed.
    DriverPackedRing(const DriverPackedRingLayout& layout, bool event_idx);

    const DriverPackedRingLayout& layout() const { return layout_; }
    uint16_t size() const { return layout_.size; }
    bool event_idx() const { return event_idx_; }
    uint16_t free_descriptors() const { return free_count_; }
    uint16_t chains_in_flight() const { return in_flight_chains_; }
    virtio::PackedPosition next_avail() const { return next_avail_; }
    virtio::PackedPosition next_used() const { return next_used_; }
    // vhost-user.rst SET_VRING_BASE for packed rings, as QEMU sends it: bits
    // 0-14 the next avail slot, 15 its wrap counter, 16-30 and 31 the same
    // for the next used slot (0x80008000 for a fresh ring).
    uint32_t vring_base() const {
        return uint32_t{next_avail_.encoded()} | uint32_t{next_used_.encoded()} << 16;
    }

    // Queues a one-descriptor chain. False (and nothing changed) when the
    // ring has no free slot.
    bool add_buffer(uint64_t addr, uint32_t len, BufferAccess access, uint32_t cookie);
    // Queues a chain in consecutive slots (§2.8.17: readable ones first).
    bool add_chain(std::span<const BufferSegment> segments, uint32_t cookie);
    // Writes `segments` into `table` (host pointer, at guest address
    // `table_gpa`, room for segments.size() entries) and queues one slot with
    // INDIRECT naming it (§2.8.7). Needs VIRTIO_F_INDIRECT_DESC.
    bool add_indirect(std::span<const BufferSegment> segments, virtio::PackedDesc* table,
                      uint64_t table_gpa, uint32_t cookie);

    void publish();
    // Whether what was published since the previous call needs a kick
    // (device event area: ENABLE / DISABLE / DESC with EVENT_IDX), after the
    // full fence §2.8.21.3.1 asks for.
    bool kick_needed();

    // Used descriptors the device has made visible and we have not taken.
    uint16_t used_pending() const;
    // Takes up to out.size() used descriptors and frees their slots and ids.
    uint16_t reclaim(std::span<Completion> out, UsedRingError* error);

    // Call suppression in the driver event area. enable_after(n): with
    // EVENT_IDX, ask for the call once the used descriptor n slots past the
    // next one is written (Linux virtqueue_enable_cb_delayed). Both enables
    // fence and return true if more than n used descriptors are pending.
    void disable_interrupts();
    bool enable_interrupts();
    bool enable_interrupts_after(uint16_t count);

private:
    uint16_t take_id();
    static void write_desc(virtio::PackedDesc& d, uint64_t addr, uint32_t len, uint16_t id,
                           uint16_t flags);
    void expose_head(virtio::PackedPosition head, uint16_t flags);
    void queue_chain(uint16_t id, uint16_t slots, uint32_t cookie);
    void set_driver_flags(uint16_t flags);

    DriverPackedRingLayout layout_{};
    bool event_idx_ = false;

    virtio::PackedPosition next_avail_{};  // next slot we write
    virtio::PackedPosition next_used_{};   // next slot the device's used descriptor lands in
    bool batch_open_ = false;              // a head is waiting for publish()
    virtio::PackedPosition batch_head_{};
    uint16_t batch_head_flags_ = 0;
    uint32_t batch_slots_ = 0;
    virtio::PackedPosition kick_checked_{};  // published position at the last kick_needed
    uint32_t unchecked_slots_ = 0;           // slots published since then
    uint16_t driver_flags_shadow_ = virtio::PackedEventSuppress::kEnable;

    // Our own books: the device may scribble on the ring but not on these.
    std::vector<uint16_t> free_ids_;
    std::vector<uint16_t> slots_;  // per id: ring slots of its chain; 0 = not in flight
    std::vector<uint32_t> cookie_;
    uint16_t free_count_ = 0;
    uint16_t in_flight_chains_ = 0;
};

static_assert(DriverRing<DriverPackedRing>);

}  // namespace vnet::frontend
