#include "frontend/driver_packed_ring.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>

namespace vnet::frontend {
namespace {

using virtio::PackedDesc;
using virtio::PackedEventSuppress;
using virtio::PackedPosition;

template <typename T>
T load_relaxed(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}
template <typename T>
T load_acquire(const T& field) {
    return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_acquire);
}
template <typename T>
void store_relaxed(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}
template <typename T>
void store_release(T& field, T value) {
    std::atomic_ref<T>(field).store(value, std::memory_order_release);
}

uint16_t access_flag(BufferAccess access) {
    return access == BufferAccess::device_writes ? PackedDesc::kFlagWrite : uint16_t{0};
}

}  // namespace

DriverPackedRing::DriverPackedRing(const DriverPackedRingLayout& layout, bool event_idx)
    : layout_(layout),
      event_idx_(event_idx),
      slots_(layout.size, 0),
      cookie_(layout.size, 0),
      free_count_(layout.size) {
    if (!virtio::is_valid_packed_queue_size(layout.size) || layout.desc == nullptr ||
        layout.driver_event == nullptr || layout.device_event == nullptr) {
        throw std::invalid_argument("DriverPackedRing: bad layout");
    }
    free_ids_.reserve(layout.size);
    for (uint32_t id = layout.size; id-- > 0;) {
        free_ids_.push_back(static_cast<uint16_t>(id));  // id 0 is handed out first
    }
    store_relaxed(layout_.driver_event->off_wrap, uint16_t{0x8000});
    store_relaxed(layout_.driver_event->flags, PackedEventSuppress::kEnable);
    std::atomic_thread_fence(std::memory_order_release);
}

uint16_t DriverPackedRing::take_id() {
    const uint16_t id = free_ids_.back();
    free_ids_.pop_back();
    return id;
}

void DriverPackedRing::write_desc(PackedDesc& d, uint64_t addr, uint32_t len, uint16_t id,
                                  uint16_t flags) {
    // relaxed: the device reads these only after the chain head's release store of its flags.
    store_relaxed(d.addr, addr);
    store_relaxed(d.len, len);
    store_relaxed(d.id, id);  // §2.8.6 needs it in the last one; Linux writes it in all
    store_relaxed(d.flags, flags);
}

// §2.8.6: a chain's first descriptor is made available after the rest; the
// first chain of a batch waits for publish().
void DriverPackedRing::expose_head(PackedPosition head, uint16_t flags) {
    if (!batch_open_) {
        batch_open_ = true;
        batch_head_ = head;
        batch_head_flags_ = flags;
        return;
    }
    // release (§2.8.21.1.1): this chain's other descriptors before its head's flags.
    store_release(layout_.desc[head.index].flags, flags);
}

void DriverPackedRing::queue_chain(uint16_t id, uint16_t slots, uint32_t cookie) {
    slots_[id] = slots;
    cookie_[id] = cookie;
    free_count_ = static_cast<uint16_t>(free_count_ - slots);
    ++in_flight_chains_;
    batch_slots_ += slots;
}

bool DriverPackedRing::add_buffer(uint64_t addr, uint32_t len, BufferAccess access,
                                  uint32_t cookie) {
    const BufferSegment segment{addr, len, access};
    return add_chain(std::span<const BufferSegment>(&segment, 1), cookie);
}

bool DriverPackedRing::add_chain(std::span<const BufferSegment> segments, uint32_t cookie) {
    if (segments.empty() || segments.size() > free_count_ || free_ids_.empty()) {
        return false;
    }
    const uint16_t id = take_id();
    const auto count = static_cast<uint16_t>(segments.size());
    const PackedPosition head = next_avail_;
    uint16_t head_flags = 0;
    for (uint16_t i = 0; i < count; ++i) {
        const bool last = i + 1 == count;
        // §2.8.21.1: AVAIL = driver wrap counter, USED = its inverse, NEXT on all but the last.
        const auto flags = static_cast<uint16_t>(virtio::avail_flags_for(next_avail_.wrap) |
                                                 access_flag(segments[i].access) |
                                                 (last ? 0 : PackedDesc::kFlagNext));
        if (i == 0) {
            head_flags = flags;
            PackedDesc& d = layout_.desc[next_avail_.index];
            store_relaxed(d.addr, segments[i].addr);
            store_relaxed(d.len, segments[i].len);
            store_relaxed(d.id, id);
        } else {
            write_desc(layout_.desc[next_avail_.index], segments[i].addr, segments[i].len, id,
                       flags);
        }
        next_avail_ = virtio::advance(next_avail_, 1, layout_.size);
    }
    expose_head(head, head_flags);
    queue_chain(id, count, cookie);
    return true;
}

bool DriverPackedRing::add_indirect(std::span<const BufferSegment> segments, PackedDesc* table,
                                    uint64_t table_gpa, uint32_t cookie) {
    if (segments.empty() || free_count_ == 0 || free_ids_.empty()) {
        return false;
    }
    for (size_t i = 0; i < segments.size(); ++i) {
        // §2.8.19: WRITE is the only flag in a table; the device ignores id. Relaxed: the
        // device reads the table only after the release store that exposes its slot.
        write_desc(table[i], segments[i].addr, segments[i].len, 0, access_flag(segments[i].access));
    }
    const uint16_t id = take_id();
    const PackedPosition head = next_avail_;
    PackedDesc& d = layout_.desc[head.index];
    store_relaxed(d.addr, table_gpa);
    store_relaxed(d.len, static_cast<uint32_t>(segments.size() * sizeof(PackedDesc)));
    store_relaxed(d.id, id);
    next_avail_ = virtio::advance(next_avail_, 1, layout_.size);
    expose_head(head, static_cast<uint16_t>(virtio::avail_flags_for(head.wrap) |
                                            PackedDesc::kFlagIndirect));
    queue_chain(id, 1, cookie);
    return true;
}

void DriverPackedRing::publish() {
    if (!batch_open_) {
        return;
    }
    // release (§2.8.21.1.1): every descriptor of the batch, and every indirect table, before
    // the first head's flags; that one store makes the batch available.
    store_release(layout_.desc[batch_head_.index].flags, batch_head_flags_);
    batch_open_ = false;
    unchecked_slots_ = std::min<uint32_t>(unchecked_slots_ + batch_slots_, 2u * 32768u);
    batch_slots_ = 0;
}

bool DriverPackedRing::kick_needed() {
    const PackedPosition old = kick_checked_;
    const uint32_t count = unchecked_slots_;
    const PackedPosition published = batch_open_ ? batch_head_ : next_avail_;
    kick_checked_ = published;
    unchecked_slots_ = 0;
    if (count == 0) {
        return false;
    }
    // §2.8.21.3.1: a full fence between our flags stores and reading the device event area.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: the device writes off_wrap before the DESC flags that make it meaningful.
    const uint16_t flags =
        load_acquire(layout_.device_event->flags) & PackedEventSuppress::kFlagsMask;
    if (flags == PackedEventSuppress::kDisable) {
        return false;
    }
    if (flags != PackedEventSuppress::kDesc || !event_idx_) {
        return true;
    }
    const PackedPosition event =
        PackedPosition::decode(load_relaxed(layout_.device_event->off_wrap));
    return virtio::packed_event_crossed(event, old, count, layout_.size);
}

uint16_t DriverPackedRing::used_pending() const {
    PackedPosition pos = next_used_;
    uint16_t pending = 0;
    while (pending < in_flight_chains_) {
        // acquire: pairs with the device's release of the flags; id is read after it.
        if (!virtio::is_used(load_acquire(layout_.desc[pos.index].flags), pos.wrap)) {
            break;
        }
        const uint16_t id = load_relaxed(layout_.desc[pos.index].id);
        if (id >= layout_.size || slots_[id] == 0) {
            break;  // reclaim reports it
        }
        pos = virtio::advance(pos, slots_[id], layout_.size);
        ++pending;
    }
    return pending;
}

uint16_t DriverPackedRing::reclaim(std::span<Completion> out, UsedRingError* error) {
    *error = UsedRingError::ok;
    uint16_t n = 0;
    while (n < out.size() && in_flight_chains_ != 0) {
        PackedDesc& d = layout_.desc[next_used_.index];
        // acquire: the device's id/len stores are visible once we see its flags.
        const uint16_t flags = load_acquire(d.flags);
        if (!virtio::is_used(flags, next_used_.wrap)) {
            break;
        }
        // Read each device-written field once, into locals, then check.
        const uint16_t id = load_relaxed(d.id);
        const uint32_t len = load_relaxed(d.len);
        if (id >= layout_.size) {
            *error = UsedRingError::id_out_of_range;
            return n;
        }
        if (slots_[id] == 0) {
            *error = UsedRingError::id_not_in_flight;
            return n;
        }
        // §2.8.4: the length is meaningful only with WRITE in the used descriptor.
        out[n++] = Completion{cookie_[id], (flags & PackedDesc::kFlagWrite) != 0 ? len : 0u};
        // §2.8.6: skip the chain's remaining slots to the next used descriptor.
        next_used_ = virtio::advance(next_used_, slots_[id], layout_.size);
        free_count_ = static_cast<uint16_t>(free_count_ + slots_[id]);
        slots_[id] = 0;
        free_ids_.push_back(id);
        --in_flight_chains_;
    }
    return n;
}

void DriverPackedRing::set_driver_flags(uint16_t flags) {
    if (driver_flags_shadow_ != flags) {
        store_release(layout_.driver_event->flags, flags);  // release: after off_wrap
        driver_flags_shadow_ = flags;
    }
}

void DriverPackedRing::disable_interrupts() {
    set_driver_flags(PackedEventSuppress::kDisable);
}

bool DriverPackedRing::enable_interrupts() {
    return enable_interrupts_after(0);
}

bool DriverPackedRing::enable_interrupts_after(uint16_t count) {
    if (event_idx_) {
        const PackedPosition event = virtio::advance(
            next_used_, std::min<uint16_t>(count, static_cast<uint16_t>(layout_.size - 1)),
            layout_.size);
        store_relaxed(layout_.driver_event->off_wrap, event.encoded());
        set_driver_flags(PackedEventSuppress::kDesc);
    } else {
        set_driver_flags(PackedEventSuppress::kEnable);
    }
    // Our store before the re-check of the used slot, or a used descriptor written just
    // before the device saw it would leave us asleep (StoreLoad).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return used_pending() > count;
}

}  // namespace vnet::frontend
