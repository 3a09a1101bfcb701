#include "virtio/ring/split_ring.hpp"

#include <algorithm>
#include <atomic>

#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {

using shared::load_acquire;
using shared::load_relaxed;
using shared::store_relaxed;
using shared::store_release;

SplitRing::SplitRing(const SplitRingLayout& layout, uint16_t last_avail_idx, uint16_t used_idx,
                     bool event_idx)
    : layout_(layout),
      event_idx_(event_idx),
      last_avail_idx_(last_avail_idx),
      cached_avail_idx_(last_avail_idx),  // "exhausted": the first avail_count reads avail->idx
      used_idx_shadow_(used_idx),
      signalled_used_(used_idx) {}

uint16_t* SplitRing::used_event_ptr() const {
    return &layout_.avail->ring[layout_.size];
}

uint16_t* SplitRing::avail_event_ptr() const {
    return static_cast<uint16_t*>(static_cast<void*>(&layout_.used->ring[layout_.size]));
}

uint16_t SplitRing::avail_count(PopStatus* error) {
    if (cached_avail_idx_ == last_avail_idx_) {
        // acquire: pairs with the driver's release (virtio_wmb) before its idx store, so the
        // ring entries and descriptors up to idx are visible before we read them (vhost smp_rmb).
        cached_avail_idx_ = load_acquire(layout_.avail->idx);
    }
    const auto available = static_cast<uint16_t>(cached_avail_idx_ - last_avail_idx_);
    // virtio 1.2 §2.7.6: the driver never has more than queue-size heads outstanding;
    // vhost: "Invalid available index change"
    if (available > layout_.size) [[unlikely]] {
        *error = PopStatus::avail_index_jump;
        return 0;
    }
    return available;
}

uint16_t SplitRing::pop_avail(std::span<uint16_t> heads, PopStatus* error) {
    const uint16_t available = avail_count(error);
    const auto n = static_cast<uint16_t>(std::min<size_t>(available, heads.size()));
    const uint16_t mask = layout_.size - 1;
    for (uint16_t i = 0; i < n; ++i) {
        const uint16_t head =
            load_relaxed(layout_.avail->ring[static_cast<uint16_t>(last_avail_idx_ + i) & mask]);
        // virtio 1.2 §2.7.6: ring entries are descriptor-chain heads; vhost: "Guest says index"
        if (head >= layout_.size) [[unlikely]] {
            *error = PopStatus::head_out_of_range;
            return 0;
        }
        heads[i] = head;
    }
    take_avail(n);
    return n;
}

void SplitRing::unpop_avail(uint16_t count) {
    // cached_avail_idx_ stays, so avail_count still covers the given-back heads without a
    // re-read; given_back_ remembers them so enable_notifications does not report them as
    // new (the 6.18 IN_ORDER livelock compared a rewound last_avail_idx with avail idx).
    last_avail_idx_ = static_cast<uint16_t>(last_avail_idx_ - count);
    given_back_ = static_cast<uint16_t>(given_back_ + count);
}

void SplitRing::publish_used() {
    // release: every used entry written by add_used is visible before the new idx (vhost smp_wmb).
    store_release(layout_.used->idx, used_idx_shadow_);
}

bool SplitRing::should_notify() {
    // seq_cst fence (vhost smp_mb): orders our used->idx store before the loads of the guest's
    // used_event / flags below; without it (StoreLoad) we could read a stale used_event while
    // the guest reads our stale used->idx, and both would sleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const bool call = wants_call(0);
    if (event_idx_) {
        signalled_used_ = used_idx_shadow_;
        signalled_used_valid_ = true;
    }
    return call;
}

bool SplitRing::wants_call(uint16_t more) const {
    if (!event_idx_) {
        // virtio 1.2 §2.7.7: without EVENT_IDX the driver suppresses calls with NO_INTERRUPT
        return (load_relaxed(layout_.avail->flags) & VirtqAvail::kFlagNoInterrupt) == 0;
    }
    if (!signalled_used_valid_) [[unlikely]] {
        return true;
    }
    // virtio 1.2 §2.7.7: with EVENT_IDX, call only if used idx crossed used_event
    const auto new_idx = static_cast<uint16_t>(used_idx_shadow_ + more);
    return vring_need_event(load_relaxed(*used_event_ptr()), new_idx, signalled_used_);
}

void SplitRing::disable_notifications() {
    if (event_idx_) {
        return;  // virtio 1.2 §2.7.10: with EVENT_IDX the driver stops kicking past avail_event
    }
    uint16_t& flags = layout_.used->flags;  // only we write used->flags
    store_relaxed(flags, static_cast<uint16_t>(load_relaxed(flags) | VirtqUsed::kFlagNoNotify));
}

bool SplitRing::enable_notifications() {
    if (event_idx_) {
        // virtio 1.2 §2.7.10: ask for a kick once the driver moves avail idx past what we saw
        store_relaxed(*avail_event_ptr(), cached_avail_idx_);
    } else {
        uint16_t& flags = layout_.used->flags;
        store_relaxed(flags,
                      static_cast<uint16_t>(load_relaxed(flags) & ~VirtqUsed::kFlagNoNotify));
    }
    // seq_cst fence (vhost smp_mb): orders the store above before the re-read of avail->idx
    // (StoreLoad). Otherwise the guest may add a buffer, read our stale flag/avail_event and
    // skip the kick while we read a stale avail->idx and go to sleep: a lost wake-up.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: if it moved, the caller will read the new ring entries next.
    cached_avail_idx_ = load_acquire(layout_.avail->idx);  // a bad jump: next avail_count
    // Compare with the end of what we have ever popped, not with last_avail_idx_: after
    // unpop_avail the two differ without any new buffer, and "true" would make the caller
    // retry the same too-small buffers forever (6.18 livelock).
    return cached_avail_idx_ != static_cast<uint16_t>(last_avail_idx_ + given_back_);
}

}  // namespace vnet::virtio
