// Split virtqueue, device side (virtio 1.2 §2.7). Owned by exactly one
// worker thread at a time; the guest is the only other party, so every
// shared-memory access is an atomic with a stated ordering and no locks.
//
// Batching is the point of the interface: pop_avail takes up to N heads with
// one read of avail->idx, add_used fills used entries that stay invisible to
// the guest until publish_used writes used->idx once for the whole batch,
// and should_notify decides whether that batch needs one call (EVENT_IDX or
// VRING_AVAIL_F_NO_INTERRUPT).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "virtio/ring/pop_status.hpp"
#include "virtio/ring/shared_access.hpp"
#include "virtio/ring/split_layout.hpp"

namespace vnet::virtio {

// One used entry as add_used_n takes it.
struct SplitUsedEntry {
    uint16_t head;
    uint32_t len;
};

// Host pointers to the three ring areas; the caller has already checked that
// each lies wholly inside guest memory and is aligned (virtio 1.2 §2.7).
struct SplitRingLayout {
    VirtqDesc* desc = nullptr;
    VirtqAvail* avail = nullptr;
    VirtqUsed* used = nullptr;
    uint16_t size = 0;  // a power of two, <= 32768
};

class SplitRing {
public:
    SplitRing() = default;
    // `last_avail_idx` is the next avail entry to take (SET_VRING_BASE);
    // `used_idx` is where the device's next used entry goes (normally the
    // guest's current used->idx, read at start-up).
    SplitRing(const SplitRingLayout& layout, uint16_t last_avail_idx, uint16_t used_idx,
              bool event_idx);

    const SplitRingLayout& layout() const { return layout_; }
    uint16_t size() const { return layout_.size; }
    uint16_t last_avail_idx() const { return last_avail_idx_; }
    uint16_t used_idx() const { return used_idx_shadow_; }
    bool event_idx() const { return event_idx_; }

    // Number of heads the guest has made available and we have not taken.
    // Re-reads avail->idx (acquire) only when the cached copy is exhausted.
    // Sets *error (avail_index_jump) and returns 0 if the guest moved
    // avail->idx by more than the queue size.
    uint16_t avail_count(PopStatus* error);

    // Takes up to heads.size() heads. Returns how many; on error returns 0
    // and sets *error (avail_index_jump or head_out_of_range: the ring is
    // then unusable until reset).
    uint16_t pop_avail(std::span<uint16_t> heads, PopStatus* error);

    // For a caller that reads the avail entries itself (SplitDeviceRing::
    // pop_burst, after avail_count and its own range checks): takes `count`
    // heads, as pop_avail would have.
    void take_avail(uint16_t count) {
        last_avail_idx_ = static_cast<uint16_t>(last_avail_idx_ + count);
        given_back_ = static_cast<uint16_t>(given_back_ - std::min(count, given_back_));
    }

    // Gives back the last `count` heads taken by pop_avail (e.g. an RX packet
    // that did not fit): they will be popped again.
    void unpop_avail(uint16_t count);

    // Records a used entry; the guest does not see it until publish_used().
    // Inline: a burst's completions are a loop of these (one per frame).
    void add_used(uint16_t head, uint32_t len) {
        VirtqUsedElem& slot = layout_.used->ring[used_idx_shadow_ & (layout_.size - 1)];
        // relaxed: the guest reads the entry only after it sees the release store in
        // publish_used.
        shared::store_relaxed(slot.id, uint32_t{head});
        shared::store_relaxed(slot.len, len);
        used_idx_shadow_ = static_cast<uint16_t>(used_idx_shadow_ + 1);
        // kernel vhost_add_used_n: once the used index passes the last signalled value, 16-bit
        // wrap makes the old value ambiguous, so the next should_notify must signal.
        if (used_idx_shadow_ == signalled_used_) [[unlikely]] {
            signalled_used_valid_ = false;
        }
    }
    // add_used for `count` entries, `entry(i)` giving the i-th's head and
    // length (as a SplitUsedEntry). The ring's fields are read once: each
    // entry's store into guest memory could alias them, so a loop of
    // add_used reloads and stores them per entry (a burst's completions).
    template <typename Entry>
    void add_used_n(uint16_t count, Entry entry) {
        VirtqUsedElem* ring = layout_.used->ring;
        const uint32_t mask = layout_.size - 1u;
        const uint16_t from = used_idx_shadow_;
        for (uint16_t i = 0; i < count; ++i) {
            const SplitUsedEntry e = entry(i);
            VirtqUsedElem& slot = ring[(from + i) & mask];
            shared::store_relaxed(slot.id, uint32_t{e.head});  // relaxed: as add_used
            shared::store_relaxed(slot.len, e.len);
        }
        used_idx_shadow_ = static_cast<uint16_t>(from + count);
        // As add_used: the index passed the last signalled value (it is one
        // of from + 1 .. from + count).
        if (static_cast<uint16_t>(signalled_used_ - from - 1u) < count) [[unlikely]] {
            signalled_used_valid_ = false;
        }
    }
    // Makes every entry added since the last publish visible with one
    // release store of used->idx.
    void publish_used();

    // After publish_used: does the guest want a call for what was published
    // since the last call? EVENT_IDX: vring_need_event(used_event, new, old)
    // with the wrap-safe "signalled" tracking of kernel vhost_notify();
    // otherwise: unless VRING_AVAIL_F_NO_INTERRUPT. Includes the full fence
    // that orders our used->idx store before reading the guest's flags.
    bool should_notify();
    // Would a publish of `more` entries beyond those added make
    // should_notify() say yes? No fence and no state change: a hint for
    // holding a burst back while the guest sleeps (a stale read only makes
    // the caller publish sooner or later; should_notify still decides the
    // call). A guest that is awake (calls off, or used_event not moved past
    // its last call) says no.
    bool wants_call(uint16_t more) const;

    // Kick suppression. disable: set VRING_USED_F_NO_NOTIFY (no-op with
    // EVENT_IDX). enable: clear it, or with EVENT_IDX write avail_event =
    // the avail index we have seen; then fence and re-check avail->idx.
    // Returns true if new buffers arrived meanwhile: the caller should
    // disable again and keep working instead of sleeping. "New" means heads
    // we have never popped (kernel vhost_enable_notify); heads given back by
    // unpop_avail do not count, else a packet too big for the posted buffers
    // would spin forever (the Linux 6.18 IN_ORDER livelock, kernel-datapath §4).
    void disable_notifications();
    bool enable_notifications();

private:
    uint16_t* used_event_ptr() const;   // in the avail ring, after ring[size]
    uint16_t* avail_event_ptr() const;  // in the used ring, after ring[size]

    SplitRingLayout layout_{};
    bool event_idx_ = false;
    uint16_t last_avail_idx_ = 0;
    uint16_t cached_avail_idx_ = 0;  // last value read from avail->idx
    uint16_t used_idx_shadow_ = 0;   // next used slot; published value lags until publish_used
    uint16_t signalled_used_ = 0;    // used idx at our last call
    bool signalled_used_valid_ = false;
    uint16_t given_back_ = 0;  // heads from last_avail_idx_ on that unpop_avail returned
};

}  // namespace vnet::virtio
