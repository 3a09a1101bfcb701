#include "frontend/driver_split_ring.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace vnet::frontend {
namespace {

using virtio::VirtqAvail;
using virtio::VirtqDesc;
using virtio::VirtqUsed;

uint16_t load_acquire(const uint16_t& field) {
    return std::atomic_ref<uint16_t>(const_cast<uint16_t&>(field)).load(std::memory_order_acquire);
}
uint16_t load_relaxed(const uint16_t& field) {
    return std::atomic_ref<uint16_t>(const_cast<uint16_t&>(field)).load(std::memory_order_relaxed);
}
uint32_t load_relaxed(const uint32_t& field) {
    return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(field)).load(std::memory_order_relaxed);
}
void store_release(uint16_t& field, uint16_t value) {
    std::atomic_ref<uint16_t>(field).store(value, std::memory_order_release);
}
void store_relaxed(uint16_t& field, uint16_t value) {
    std::atomic_ref<uint16_t>(field).store(value, std::memory_order_relaxed);
}

uint16_t flags_for(BufferAccess access) {
    return access == BufferAccess::device_writes ? VirtqDesc::kFlagWrite : uint16_t{0};
}

}  // namespace

DriverSplitRing::DriverSplitRing(const DriverRingLayout& layout, bool event_idx,
                                 uint16_t start_index)
    : layout_(layout),
      mask_(static_cast<uint16_t>(layout.size - 1)),
      event_idx_(event_idx),
      avail_shadow_(start_index),
      avail_published_(start_index),
      kick_checked_(start_index),
      last_used_idx_(start_index),
      next_(layout.size),
      chain_tail_(layout.size),
      chain_len_(layout.size, 0),
      cookie_(layout.size, 0),
      free_count_(layout.size) {
    if (!virtio::is_valid_split_queue_size(layout.size) || layout.desc == nullptr ||
        layout.avail == nullptr || layout.used == nullptr) {
        throw std::invalid_argument("DriverSplitRing: bad layout");
    }
    for (uint16_t i = 0; i < layout.size; ++i) {
        next_[i] = static_cast<uint16_t>(i + 1);  // the last link is never followed
    }
    // Both indices start where SET_VRING_BASE says; a device that trusts
    // used->idx on start (DPDK does, for reconnects) then agrees with us.
    store_relaxed(layout_.avail->idx, start_index);
    store_relaxed(layout_.used->idx, start_index);
    store_relaxed(*used_event_ptr(), start_index);
    std::atomic_thread_fence(std::memory_order_release);
}

uint16_t* DriverSplitRing::used_event_ptr() const {
    return &layout_.avail->ring[layout_.size];
}

uint16_t* DriverSplitRing::avail_event_ptr() const {
    return reinterpret_cast<uint16_t*>(&layout_.used->ring[layout_.size]);
}

uint16_t DriverSplitRing::take_free_descriptor() {
    const uint16_t d = free_head_;
    free_head_ = next_[d];
    --free_count_;
    return d;
}

void DriverSplitRing::queue_head(uint16_t head, uint16_t tail, uint16_t count, uint32_t cookie) {
    chain_tail_[head] = tail;
    chain_len_[head] = count;
    cookie_[head] = cookie;
    ++in_flight_chains_;
    // A plain store is enough: the device reads this slot only after the
    // release store of avail->idx in publish().
    layout_.avail->ring[avail_shadow_ & mask_] = head;
    ++avail_shadow_;
}

bool DriverSplitRing::add_buffer(uint64_t addr, uint32_t len, BufferAccess access,
                                 uint32_t cookie) {
    if (free_count_ == 0) {
        return false;
    }
    const uint16_t d = take_free_descriptor();
    VirtqDesc& desc = layout_.desc[d];
    desc.addr = addr;
    desc.len = len;
    desc.flags = flags_for(access);
    desc.next = 0;
    queue_head(d, d, 1, cookie);
    return true;
}

bool DriverSplitRing::add_chain(std::span<const BufferSegment> segments, uint32_t cookie) {
    if (segments.empty() || segments.size() > free_count_) {
        return false;
    }
    const auto count = static_cast<uint16_t>(segments.size());
    const uint16_t head = take_free_descriptor();
    uint16_t d = head;
    for (uint16_t i = 0; i < count; ++i) {
        const bool last = i + 1 == count;
        const uint16_t next = last ? uint16_t{0} : take_free_descriptor();
        VirtqDesc& desc = layout_.desc[d];
        desc.addr = segments[i].addr;
        desc.len = segments[i].len;
        desc.flags = static_cast<uint16_t>(flags_for(segments[i].access) |
                                           (last ? 0 : VirtqDesc::kFlagNext));
        desc.next = next;
        next_[d] = next;
        if (!last) {
            d = next;
        }
    }
    queue_head(head, d, count, cookie);
    return true;
}

void DriverSplitRing::publish() {
    if (avail_shadow_ == avail_published_) {
        return;
    }
    // virtio 1.2 §2.7.13.3.1: descriptors and ring entries before the index.
    store_release(layout_.avail->idx, avail_shadow_);
    avail_published_ = avail_shadow_;
}

bool DriverSplitRing::kick_needed() {
    const uint16_t old_idx = kick_checked_;
    const uint16_t new_idx = avail_published_;
    kick_checked_ = new_idx;
    if (old_idx == new_idx) {
        return false;
    }
    // virtio 1.2 §2.7.13.4: the avail->idx store must be visible before we
    // read the device's event index or flags, or we may miss a kick the
    // device is about to ask for (store-load ordering needs a full fence).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (event_idx_) {
        return virtio::vring_need_event(load_relaxed(*avail_event_ptr()), new_idx, old_idx);
    }
    return (load_relaxed(layout_.used->flags) & VirtqUsed::kFlagNoNotify) == 0;
}

uint16_t DriverSplitRing::used_pending() const {
    return static_cast<uint16_t>(load_acquire(layout_.used->idx) - last_used_idx_);
}

void DriverSplitRing::free_chain(uint16_t head) {
    next_[chain_tail_[head]] = free_head_;
    free_head_ = head;
    free_count_ = static_cast<uint16_t>(free_count_ + chain_len_[head]);
    chain_len_[head] = 0;
    --in_flight_chains_;
}

uint16_t DriverSplitRing::reclaim(std::span<Completion> out, UsedRingError* error) {
    *error = UsedRingError::ok;
    // The acquire load pairs with the device's release store of used->idx:
    // the entries below it are complete once we see the index.
    const uint16_t pending = used_pending();
    if (pending > in_flight_chains_) {
        *error = UsedRingError::used_index_jump;
        return 0;
    }
    const auto n = static_cast<uint16_t>(std::min<size_t>(pending, out.size()));
    for (uint16_t i = 0; i < n; ++i) {
        const virtio::VirtqUsedElem& elem = layout_.used->ring[last_used_idx_ & mask_];
        // Read each device-written field once, into locals, then check.
        const uint32_t id = load_relaxed(elem.id);
        const uint32_t len = load_relaxed(elem.len);
        if (id >= layout_.size) {
            *error = UsedRingError::id_out_of_range;
            return i;
        }
        if (chain_len_[id] == 0) {
            *error = UsedRingError::id_not_in_flight;
            return i;
        }
        out[i] = Completion{.cookie = cookie_[id], .len = len};
        free_chain(static_cast<uint16_t>(id));
        ++last_used_idx_;
    }
    return n;
}

void DriverSplitRing::disable_interrupts() {
    if (event_idx_) {
        // One behind what we have consumed: the device, which is at or
        // ahead of last_used_idx_, crosses it only after a full wrap; by
        // then we will have re-enabled. (Linux writes 0 with the same aim.)
        store_relaxed(*used_event_ptr(), static_cast<uint16_t>(last_used_idx_ - 1));
        return;
    }
    avail_flags_shadow_ |= VirtqAvail::kFlagNoInterrupt;
    store_relaxed(layout_.avail->flags, avail_flags_shadow_);
}

bool DriverSplitRing::enable_interrupts() {
    return enable_interrupts_after(0);
}

bool DriverSplitRing::enable_interrupts_after(uint16_t count) {
    if (event_idx_) {
        // virtio 1.2 §2.7.10: the device calls when used->idx passes
        // used_event, i.e. once entry number used_event has been written.
        store_relaxed(*used_event_ptr(), static_cast<uint16_t>(last_used_idx_ + count));
    } else {
        avail_flags_shadow_ &= static_cast<uint16_t>(~VirtqAvail::kFlagNoInterrupt);
        store_relaxed(layout_.avail->flags, avail_flags_shadow_);
    }
    // Our store must be visible before we re-read used->idx, or an entry
    // the device added just before seeing it would leave us asleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return used_pending() > count;
}

}  // namespace vnet::frontend
