// DriverSplitRing: the driver (guest) half of a split virtqueue, virtio 1.2
// §2.7. It is what a VM's virtio-net driver does, and what vnet-pktgen uses
// to talk to a back end: put buffers in the descriptor table, publish their
// heads in the avail ring, decide whether the device needs a kick, and take
// back what the device returned through the used ring.
//
// Deliberately separate from the device side (virtio/ring/split_ring.hpp): a test
// peer that shares code with the thing it tests would share its bugs.
//
// Batching: add_* writes descriptors and avail entries that the device cannot
// see until publish() stores avail->idx once (release). kick_needed() then
// asks, once per batch, whether the device wants a notification (Linux
// virtqueue_kick_prepare_split). One owner thread; the device is the only
// other party, so shared fields go through std::atomic_ref.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "frontend/driver_ring.hpp"
#include "frontend/driver_ring_layout.hpp"

namespace vnet::frontend {

class DriverSplitRing {
public:
    // `start_index` is the ring position both sides start at (the value sent
    // with SET_VRING_BASE); avail->idx and used->idx are initialised to it.
    DriverSplitRing(const DriverRingLayout& layout, bool event_idx, uint16_t start_index = 0);

    const DriverRingLayout& layout() const { return layout_; }
    uint16_t size() const { return layout_.size; }
    bool event_idx() const { return event_idx_; }
    uint16_t free_descriptors() const { return free_count_; }
    uint16_t chains_in_flight() const { return in_flight_chains_; }
    uint16_t avail_shadow_idx() const { return avail_shadow_; }
    uint16_t last_used_idx() const { return last_used_idx_; }
    // vhost-user.rst SET_VRING_BASE for split rings: the next avail index.
    uint32_t vring_base() const { return avail_shadow_; }

    // Queues a one-descriptor chain. Returns false (and changes nothing) when
    // no descriptor is free.
    bool add_buffer(uint64_t addr, uint32_t len, BufferAccess access, uint32_t cookie);
    // Queues a chain of segments in order (virtio 1.2 §2.7.4.2: readable
    // ones first). Returns false when there are not enough free descriptors.
    bool add_chain(std::span<const BufferSegment> segments, uint32_t cookie);

    // Makes everything queued since the last publish visible to the device
    // with one release store of avail->idx.
    void publish();

    // Whether what was published since the previous call needs a kick
    // (EVENT_IDX: vring_need_event on avail_event; otherwise unless
    // VRING_USED_F_NO_NOTIFY). Includes the full fence that orders our
    // avail->idx store before reading the device's suppression fields.
    bool kick_needed();

    // Number of used entries the device has published and we have not taken.
    uint16_t used_pending() const;

    // Takes up to out.size() used entries and frees their descriptors.
    // Returns how many were taken; on a malformed used ring stops and sets
    // *error (the ring should then be considered broken).
    uint16_t reclaim(std::span<Completion> out, UsedRingError* error);

    // Interrupt (call) suppression, virtio 1.2 §2.7.7 and §2.7.10.
    // disable: VRING_AVAIL_F_NO_INTERRUPT, or with EVENT_IDX a used_event the
    // device will not cross before a wrap. enable: ask for a call at the next
    // used entry. enable_after(n): ask for it after n more entries (Linux
    // virtqueue_enable_cb_delayed). Both enables fence and return true if
    // used entries are already pending (the caller must not sleep then).
    void disable_interrupts();
    bool enable_interrupts();
    bool enable_interrupts_after(uint16_t count);

private:
    uint16_t* used_event_ptr() const;   // in the avail ring, after ring[size]
    uint16_t* avail_event_ptr() const;  // in the used ring, after ring[size]
    uint16_t take_free_descriptor();
    void queue_head(uint16_t head, uint16_t tail, uint16_t count, uint32_t cookie);
    void free_chain(uint16_t head);

    DriverRingLayout layout_{};
    uint16_t mask_ = 0;
    bool event_idx_ = false;

    uint16_t avail_shadow_ = 0;     // next avail slot; published value lags until publish()
    uint16_t avail_published_ = 0;  // last value stored to avail->idx
    uint16_t kick_checked_ = 0;     // avail idx at the last kick_needed()
    uint16_t last_used_idx_ = 0;    // next used entry to take
    uint16_t avail_flags_shadow_ = 0;

    // Our own copy of what we put in the descriptor table: the device can
    // read the table but we never read it back, so a device that scribbles
    // on it cannot corrupt our free list.
    std::vector<uint16_t> next_;        // free list and chain links
    std::vector<uint16_t> chain_tail_;  // per head
    std::vector<uint16_t> chain_len_;   // per head; 0 = not in flight
    std::vector<uint32_t> cookie_;      // per head
    uint16_t free_head_ = 0;
    uint16_t free_count_ = 0;
    uint16_t in_flight_chains_ = 0;
};

static_assert(DriverRing<DriverSplitRing>);

}  // namespace vnet::frontend
