#include "virtio/ring/packed_ring.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "virtio/ring/chain_segments.hpp"
#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {
namespace {

using shared::load_acquire;
using shared::load_relaxed;
using shared::store_relaxed;
using shared::store_release;

// One descriptor as read, once, from guest memory. Checks run on this copy
// only, so the guest cannot change a field between check and use.
struct LocalDesc {
    uint64_t addr;
    uint32_t len;
    uint16_t id;
    uint16_t flags;
};

// The rest of a ring descriptor whose flags were already loaded. Relaxed:
// the acquire load of the chain head's flags ordered the driver's writes of
// every descriptor of the chain before these loads (§2.8.6: the first
// descriptor is made available last).
inline LocalDesc read_ring_desc(const PackedDesc& d, uint16_t flags) {
    return LocalDesc{load_relaxed(d.addr), load_relaxed(d.len), load_relaxed(d.id), flags};
}

// Indirect tables need no alignment in the spec, and an atomic load of a
// misaligned uint64_t is undefined: read those byte-wise.
[[gnu::cold, gnu::noinline]] LocalDesc read_misaligned_table_desc(const uint8_t* src) {
    uint8_t bytes[sizeof(PackedDesc)];
    for (size_t i = 0; i < sizeof(bytes); ++i) {
        bytes[i] = load_relaxed(src[i]);
    }
    LocalDesc out;
    std::memcpy(&out.addr, bytes, 8);
    std::memcpy(&out.len, bytes + 8, 4);
    std::memcpy(&out.id, bytes + 12, 2);
    std::memcpy(&out.flags, bytes + 14, 2);
    return out;
}

// An indirect table entry: two relaxed 64-bit loads (the table was written
// before the ring descriptor that names it was made available).
inline LocalDesc read_table_desc(const uint8_t* entry) {
    if ((reinterpret_cast<uintptr_t>(entry) & 7) != 0) [[unlikely]] {
        return read_misaligned_table_desc(entry);
    }
    const auto* words = static_cast<const uint64_t*>(static_cast<const void*>(entry));
    const uint64_t addr = load_relaxed(words[0]);
    const uint64_t rest = load_relaxed(words[1]);  // len, id, flags (little-endian)
    return LocalDesc{addr, static_cast<uint32_t>(rest), static_cast<uint16_t>(rest >> 32),
                     static_cast<uint16_t>(rest >> 48)};
}

}  // namespace

PackedRing::PackedRing(const PackedRingLayout& layout, const RingConfig& config)
    : layout_(layout),
      memory_(config.memory),
      indirect_allowed_(config.indirect_allowed),
      event_idx_(config.event_idx),
      in_order_(config.in_order) {}

PopStatus PackedRing::pop(std::span<iovec> out, PoppedChain& chain) {
    if (layout_.size == 0) [[unlikely]] {
        return PopStatus::empty;
    }
    if (resume_pending()) [[unlikely]] {
        return pop_resumed(&out, chain);
    }
    PackedPosition pos = avail_;
    // acquire: pairs with the driver's release of the head's flags, which it stores after
    // writing the whole chain (§2.8.21.1.1), so everything below reads complete descriptors.
    uint16_t flags = load_acquire(layout_.desc[pos.index].flags);
    // virtio 1.2 §2.8.15: use a descriptor only once its AVAIL bit shows it was made available
    if (!is_available(flags, pos.wrap)) {
        return PopStatus::empty;
    }
    ChainSegments segments(out, *memory_, &region_hint_);
    uint32_t slots = 0;
    uint16_t id = 0;
    for (;;) {
        const LocalDesc d = read_ring_desc(layout_.desc[pos.index], flags);
        ++slots;
        const PopStatus s = add_desc(d.addr, d.len, d.flags, slots, segments);
        if (s != PopStatus::ok) [[unlikely]] {
            if (s == PopStatus::too_many_segments) {
                note_chain_seen(pos, d.flags, slots);
            }
            return s;
        }
        if ((d.flags & PackedDesc::kFlagNext) == 0) {
            id = d.id;  // virtio 1.2 §2.8.6: the Buffer ID is in the last descriptor of the list
            break;
        }
        // virtio 1.2 §2.8.17: a driver MUST NOT create a descriptor list longer than the Queue Size
        if (slots == layout_.size) {
            return PopStatus::chain_too_long;
        }
        pos = advance(pos, 1, layout_.size);
        // relaxed: ordered by the head's acquire above, like the rest of the descriptor.
        flags = load_relaxed(layout_.desc[pos.index].flags);
        // virtio 1.2 §2.8.6: AVAIL/USED must be set correctly in every descriptor of the list
        if (!is_available(flags, pos.wrap)) {
            return PopStatus::descriptor_not_available;
        }
    }
    // virtio 1.2 §2.8.22: Buffer IDs are < Queue Size (the driver indexes its table with them)
    if (id >= layout_.size) {
        return PopStatus::id_out_of_range;
    }
    // virtio 1.2 §2.8.16: the driver reuses a slot only after seeing it used, so at most Queue
    // Size slots are in flight; more means our used writes would land on unread descriptors
    if (slots_between(used_, avail_, layout_.size) + slots > layout_.size) {
        return PopStatus::too_many_in_flight;
    }
    if (inflight_.active()) [[unlikely]] {
        if (const PopStatus s = take_tracked(static_cast<uint16_t>(slots), id);
            s != PopStatus::ok) {
            return s;
        }
    }
    avail_ = advance(avail_, slots, layout_.size);
    given_back_ = static_cast<uint16_t>(given_back_ - std::min<uint32_t>(slots, given_back_));
    segments.finish(chain);
    chain.id = id;
    chain.slots = static_cast<uint16_t>(slots);
    return PopStatus::ok;
}

PopStatus PackedRing::skip(PoppedChain& chain) {
    if (layout_.size == 0) [[unlikely]] {
        return PopStatus::empty;
    }
    if (resume_pending()) [[unlikely]] {
        return pop_resumed(nullptr, chain);
    }
    PackedPosition pos = avail_;
    // acquire: as in pop, the whole chain is visible once the head's flags are.
    uint16_t flags = load_acquire(layout_.desc[pos.index].flags);
    // virtio 1.2 §2.8.15: use a descriptor only once its AVAIL bit shows it was made available
    if (!is_available(flags, pos.wrap)) {
        return PopStatus::empty;
    }
    uint32_t slots = 1;
    while ((flags & PackedDesc::kFlagNext) != 0) {
        // virtio 1.2 §2.8.17: a driver MUST NOT create a descriptor list longer than the Queue Size
        if (slots == layout_.size) {
            return PopStatus::chain_too_long;
        }
        pos = advance(pos, 1, layout_.size);
        flags = load_relaxed(layout_.desc[pos.index].flags);
        // virtio 1.2 §2.8.6: AVAIL/USED must be set correctly in every descriptor of the list
        if (!is_available(flags, pos.wrap)) {
            return PopStatus::descriptor_not_available;
        }
        ++slots;
    }
    // virtio 1.2 §2.8.6: the Buffer ID is in the last descriptor of the list
    const uint16_t id = load_relaxed(layout_.desc[pos.index].id);
    // virtio 1.2 §2.8.22: Buffer IDs are < Queue Size
    if (id >= layout_.size) {
        return PopStatus::id_out_of_range;
    }
    // virtio 1.2 §2.8.16: at most Queue Size slots in flight (see pop)
    if (slots_between(used_, avail_, layout_.size) + slots > layout_.size) {
        return PopStatus::too_many_in_flight;
    }
    if (inflight_.active()) [[unlikely]] {
        if (const PopStatus s = take_tracked(static_cast<uint16_t>(slots), id);
            s != PopStatus::ok) {
            return s;
        }
    }
    avail_ = advance(avail_, slots, layout_.size);
    given_back_ = static_cast<uint16_t>(given_back_ - std::min<uint32_t>(slots, given_back_));
    chain = PoppedChain{};
    chain.id = id;
    chain.slots = static_cast<uint16_t>(slots);
    return PopStatus::ok;
}

bool PackedRing::next_available() const {
    if (layout_.size == 0) [[unlikely]] {
        return false;
    }
    if (resume_pending()) [[unlikely]] {
        return true;
    }
    // acquire: like pop's load of a chain head.
    return is_available(load_acquire(layout_.desc[avail_.index].flags), avail_.wrap);
}

uint16_t PackedRing::untaken_chains() const {
    PackedPosition pos = avail_;
    uint32_t slots = 0;
    uint16_t chains = 0;
    if (resume_pending()) {
        // The rest of the window, then the ring from where the window ends.
        chains = static_cast<uint16_t>(resume_.chains.size() - resume_next_);
        slots = resume_.slots - resume_.chains[resume_next_].offset;
        pos = advance(resume_.used, resume_.slots, layout_.size);
    }
    // At most a ring's worth: a used descriptor (AVAIL == USED) never looks available.
    while (slots < layout_.size) {
        // acquire: as pop's load of a chain head.
        uint16_t flags = load_acquire(layout_.desc[pos.index].flags);
        if (!is_available(flags, pos.wrap)) {
            break;
        }
        while ((flags & PackedDesc::kFlagNext) != 0) {
            pos = advance(pos, 1, layout_.size);
            if (++slots >= layout_.size) {
                return chains;  // a chain as long as the ring: pop would refuse it
            }
            flags = load_relaxed(layout_.desc[pos.index].flags);
            if (!is_available(flags, pos.wrap)) {
                return chains;  // still being written, or broken: not counted
            }
        }
        pos = advance(pos, 1, layout_.size);
        ++slots;
        ++chains;
    }
    return chains;
}

// One descriptor of a chain (the `slots`-th): a buffer, or the one indirect table.
PopStatus PackedRing::add_desc(uint64_t addr, uint32_t len, uint16_t flags, uint32_t slots,
                               ChainSegments& segments) {
    if ((flags & PackedDesc::kFlagIndirect) != 0) {
        // virtio 1.2 §2.8.19: the driver MUST NOT set INDIRECT without VIRTIO_F_INDIRECT_DESC
        if (!indirect_allowed_) {
            return PopStatus::indirect_not_negotiated;
        }
        // virtio 1.2 §2.8.19: no INDIRECT descriptor in a list linked by NEXT (with NEXT...
        if ((flags & PackedDesc::kFlagNext) != 0) {
            return PopStatus::indirect_with_next;
        }
        // ...nor at the end of one)
        if (slots != 1) {
            return PopStatus::indirect_in_chain;
        }
        return add_indirect(addr, len, segments);
    }
    return segments.add(addr, len, (flags & PackedDesc::kFlagWrite) != 0);
}

PopStatus PackedRing::add_indirect(uint64_t addr, uint32_t len, ChainSegments& segments) {
    // virtio 1.2 §2.8.7: the table is len / 16 descriptors; an empty one describes no buffer
    if (len == 0 || len % sizeof(PackedDesc) != 0) {
        return PopStatus::indirect_bad_length;
    }
    const uint32_t entries = len / sizeof(PackedDesc);
    // virtio 1.2 §2.8.5: unless the device says otherwise a list holds at most Queue Size entries
    if (entries > layout_.size) {
        return PopStatus::indirect_too_large;
    }
    // The table is read in place, so it must lie in one region (vhost translate_desc).
    const uint8_t* table = memory_->gpa_to_host(addr, len, &region_hint_);
    if (table == nullptr) {
        return PopStatus::indirect_table_unmapped;
    }
    for (uint32_t i = 0; i < entries; ++i) {
        const LocalDesc e = read_table_desc(table + i * sizeof(PackedDesc));
        // virtio 1.2 §2.8.19: no flag but WRITE in an indirect table, so no nested table
        if ((e.flags & PackedDesc::kFlagIndirect) != 0) {
            return PopStatus::indirect_nested;
        }
        // virtio 1.2 §2.8.7: NEXT (like id) is reserved and ignored here: entries are in order
        const PopStatus s = segments.add(e.addr, e.len, (e.flags & PackedDesc::kFlagWrite) != 0);
        if (s != PopStatus::ok) [[unlikely]] {
            return s;
        }
    }
    return PopStatus::ok;
}

// too_many_segments leaves the chain in the ring for a retry. Like a rewound
// chain it was seen, so enable_notifications must not call it new work (a
// chain the caller can never fit would otherwise spin the caller): count its
// slots, cold path, without translating anything.
void PackedRing::note_chain_seen(PackedPosition pos, uint16_t flags, uint32_t slots) {
    while ((flags & PackedDesc::kFlagNext) != 0 && slots < layout_.size) {
        pos = advance(pos, 1, layout_.size);
        flags = load_relaxed(layout_.desc[pos.index].flags);
        if (!is_available(flags, pos.wrap)) {
            break;
        }
        ++slots;
    }
    given_back_ = static_cast<uint16_t>(std::max<uint32_t>(given_back_, slots));
}

void PackedRing::rewind(RingPosition to) {
    const PackedPosition target = PackedPosition::decode(to.raw);
    const uint32_t back = slots_between(target, avail_, layout_.size);
    // A position from position() is at most a ring's worth behind; anything else is a caller
    // bug, and refusing it keeps the ring consistent.
    if (back > layout_.size) [[unlikely]] {
        return;
    }
    if (inflight_.active()) [[unlikely]] {
        rewind_tracked(back);
    }
    avail_ = target;
    given_back_ = static_cast<uint16_t>(std::min<uint32_t>(given_back_ + back, layout_.size));
}

void PackedRing::add_used(uint16_t id, uint16_t slots, uint32_t len) {
    if (layout_.size == 0) [[unlikely]] {
        return;  // never set up: nothing was popped
    }
    slots = std::clamp<uint16_t>(slots, 1, layout_.size);
    if (len == 0 && last_staged_zero_length_) {
        // In order, so the driver takes every buffer up to `id` as used: the
        // descriptor written last now ends at this chain. Relaxed: the guest
        // reads it only after the burst head's release in publish_used.
        store_relaxed(layout_.desc[last_staged_.index].id, id);
        used_ = advance(used_, slots, layout_.size);
        staged_slots_ += slots;
        if (inflight_.active()) [[unlikely]] {
            add_used_tracked(id, slots);
        }
        return;
    }
    PackedDesc& d = layout_.desc[used_.index];
    // relaxed: the guest reads them only after it sees this slot's flags (release below, or
    // the burst head's release in publish_used, which comes later in program order).
    store_relaxed(d.id, id);
    store_relaxed(d.len, len);
    // virtio 1.2 §2.8.1: a used descriptor has AVAIL = USED = the device wrap counter;
    // §2.8.3: WRITE says whether the device wrote anything into the buffer.
    const auto flags =
        static_cast<uint16_t>(used_flags_for(used_.wrap) | (len != 0 ? PackedDesc::kFlagWrite : 0));
    if (staged_ == 0) {
        batch_head_ = used_;
        batch_head_flags_ = flags;  // stored last, by publish_used
    } else {
        // release: id and len before flags, for a driver that reads this slot right after the
        // head. It cannot get here before the head is published: it polls the head first.
        store_release(d.flags, flags);
    }
    last_staged_ = used_;
    last_staged_zero_length_ = in_order_ && len == 0;
    used_ = advance(used_, slots, layout_.size);
    ++staged_;
    staged_slots_ += slots;
    if (inflight_.active()) [[unlikely]] {
        add_used_tracked(id, slots);
    }
}

void PackedRing::publish_used() {
    if (staged_ == 0) {
        return;
    }
    const bool tracked = inflight_.active();
    if (tracked) [[unlikely]] {
        inflight_.prepare_publish(used_);  // vhost-user.rst: the region's used_idx goes first
    }
    // release: every id, len and flags store of the burst is visible before the head's flags,
    // so a driver polling the head sees the whole burst at once (§2.8.9 multi-buffer order).
    store_release(layout_.desc[batch_head_.index].flags, batch_head_flags_);
    if (tracked) [[unlikely]] {
        inflight_.published();
    }
    published_used_ = used_;
    unsignalled_slots_ = std::min<uint32_t>(unsignalled_slots_ + staged_slots_, 2u * 32768u);
    staged_ = 0;
    staged_slots_ = 0;
    last_staged_zero_length_ = false;  // a published descriptor is the driver's
}

bool PackedRing::should_notify() {
    // seq_cst fence (vhost smp_mb): orders our flags stores before the loads of the driver's
    // event area (StoreLoad); otherwise both sides could read stale values and sleep.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Nothing published since the last call: no call.
    const bool call = unsignalled_slots_ != 0 && wants_call(0);
    signalled_ = published_used_;
    unsignalled_slots_ = 0;
    signalled_valid_ = true;
    return call;
}

bool PackedRing::wants_call(uint16_t more) const {
    // acquire: a driver writes off_wrap before the flags that make it meaningful (Linux
    // virtqueue_enable_cb_prepare_packed), so off_wrap below is at least that new.
    const uint16_t flags =
        load_acquire(layout_.driver_event->flags) & PackedEventSuppress::kFlagsMask;
    // virtio 1.2 §2.8.10: DISABLE means no used buffer notifications
    if (flags == PackedEventSuppress::kDisable) {
        return false;
    }
    // virtio 1.2 §2.8.10: DESC is only valid with EVENT_IDX; ENABLE, or anything we do not
    // understand (reserved 3), gets a call: a spurious one is cheap, a lost one hangs the guest.
    if (flags != PackedEventSuppress::kDesc || !event_idx_ || !signalled_valid_) {
        return true;
    }
    const PackedPosition event =
        PackedPosition::decode(load_relaxed(layout_.driver_event->off_wrap));
    // virtio 1.2 §2.8.10: with DESC, call once the descriptor at off/wrap has been used
    return packed_event_crossed(event, signalled_, unsignalled_slots_ + staged_slots_ + more,
                                layout_.size);
}

void PackedRing::disable_notifications() {
    if (device_flags_shadow_ == PackedEventSuppress::kDisable) {
        return;  // the area is ours alone: no need to dirty the guest's cache line again
    }
    // relaxed: a hint; a kick that still comes is harmless.
    store_relaxed(layout_.device_event->flags, PackedEventSuppress::kDisable);
    device_flags_shadow_ = PackedEventSuppress::kDisable;
}

bool PackedRing::enable_notifications() {
    // Resubmitted chains never handed out (or only given back) are work already there.
    if (resume_pending() && slots_between(resume_.used, avail_, layout_.size) + given_back_ <
                                resume_.slots) [[unlikely]] {
        return true;
    }
    // The first slot we have never popped: given-back chains are not new work, or a packet too
    // big for the posted buffers would spin the caller forever (Linux 6.18 livelock).
    const PackedPosition fresh = advance(avail_, given_back_, layout_.size);
    if (event_idx_) {
        // virtio 1.2 §2.8.10: with DESC, kick me once the descriptor at off/wrap is available
        store_relaxed(layout_.device_event->off_wrap, fresh.encoded());
        // release: off_wrap before the flags that make it meaningful.
        store_release(layout_.device_event->flags, PackedEventSuppress::kDesc);
        device_flags_shadow_ = PackedEventSuppress::kDesc;
    } else if (device_flags_shadow_ != PackedEventSuppress::kEnable) {
        store_relaxed(layout_.device_event->flags, PackedEventSuppress::kEnable);
        device_flags_shadow_ = PackedEventSuppress::kEnable;
    }
    // seq_cst fence (vhost smp_mb): our store before the re-check below (StoreLoad); else the
    // driver may add a buffer, read our stale flags and skip the kick while we read a stale
    // descriptor and sleep: a lost wake-up.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // acquire: if it is available, the caller pops it next (pop loads it again with acquire).
    return is_available(load_acquire(layout_.desc[fresh.index].flags), fresh.wrap);
}

PopStatus PackedRing::pop_resumed(std::span<iovec>* out, PoppedChain& chain) {
    const PackedResume::Chain& c = resume_.chains[resume_next_];
    // virtio 1.2 §2.8.16: as pop (recovery keeps the window within a ring)
    if (slots_between(used_, avail_, layout_.size) + c.num > layout_.size) {
        return PopStatus::too_many_in_flight;
    }
    if (out != nullptr) {
        ChainSegments segments(*out, *memory_, &region_hint_);
        for (uint32_t k = 0; k < c.num; ++k) {
            // Our private copy, made at recovery: checked as the ring descriptors were.
            const PackedResume::Desc& d = resume_.descs[c.first + k];
            // virtio 1.2 §2.8.6: NEXT on every descriptor of the list but the last
            if (((d.flags & PackedDesc::kFlagNext) != 0) != (k + 1 < c.num)) {
                return PopStatus::resumed_chain_invalid;
            }
            const PopStatus s = add_desc(d.addr, d.len, d.flags, k + 1, segments);
            if (s != PopStatus::ok) [[unlikely]] {
                if (s == PopStatus::too_many_segments) {
                    given_back_ = std::max(given_back_, c.num);  // seen, as note_chain_seen
                }
                return s;
            }
        }
        segments.finish(chain);
    } else {
        chain = PoppedChain{};
    }
    // Still in flight, with its counter: nothing to take.
    avail_ = advance(avail_, c.num, layout_.size);
    given_back_ = static_cast<uint16_t>(given_back_ - std::min(c.num, given_back_));
    ++resume_next_;
    chain.id = c.id;
    chain.slots = c.num;
    return PopStatus::ok;
}

PopStatus PackedRing::take_tracked(uint16_t slots, uint16_t id) {
    switch (inflight_.take(layout_.desc, avail_, slots, id)) {
        case PackedInflight::TakeResult::ok:
            return PopStatus::ok;
        case PackedInflight::TakeResult::id_in_flight:
            return PopStatus::id_in_flight;
        case PackedInflight::TakeResult::no_free_entry:
            return PopStatus::too_many_in_flight;
    }
    return PopStatus::too_many_in_flight;  // unreachable; fail closed
}

void PackedRing::rewind_tracked(uint32_t back) {
    uint32_t taken = back;  // slots of chains taken by us, not resubmitted ones
    if (window_open_) {
        // Offsets from the window's start; within two rings while it is open (completions
        // trail the window, pops lead completions by at most a ring).
        const uint32_t window = resume_.slots;
        const uint32_t cur = slots_between(resume_.used, avail_, layout_.size);
        const uint32_t target = cur - std::min(back, cur);
        taken = (cur > window ? cur - window : 0) - (target > window ? target - window : 0);
        // Resubmitted chains stay in flight; they are handed out again from `target` on.
        while (resume_next_ > 0 && resume_.chains[resume_next_ - 1].offset >= target) {
            --resume_next_;
        }
    }
    inflight_.give_back(taken);
}

void PackedRing::add_used_tracked(uint16_t id, uint16_t slots) {
    inflight_.add_used(id);
    if (window_open_) {
        // Once as many slots were completed as the window holds, no rewind reaches into it:
        // the chains after a rewind target are never completed.
        window_used_ += slots;
        window_open_ = window_used_ < resume_.slots;
    }
}

void PackedRing::track_inflight(PackedInflight tracker, PackedResume resume) {
    inflight_ = std::move(tracker);
    resume_ = std::move(resume);
    resume_next_ = 0;
    window_used_ = 0;
    window_open_ = !resume_.chains.empty();
    if (resume_.from_base) {
        return;  // a fresh region: the vring base said where the ring is
    }
    // The region's used position, and avail at the window's start (with an empty window, the
    // dead back end had taken nothing it did not complete: avail = used).
    reset_positions(resume_.used, resume_.used);
}

void PackedRing::reset_positions(PackedPosition avail, PackedPosition used) {
    avail_ = avail;
    given_back_ = 0;
    used_ = used;
    published_used_ = used;
    batch_head_ = used;
    staged_ = 0;
    staged_slots_ = 0;
    last_staged_zero_length_ = false;
    signalled_ = used;
    unsignalled_slots_ = 0;
    signalled_valid_ = false;
}

uint32_t PackedRing::vring_base() const {
    return uint32_t{avail_.encoded()} | (uint32_t{published_used_.encoded()} << 16);
}

namespace {

PackedPosition base_avail(uint32_t num) {
    return PackedPosition::decode(static_cast<uint16_t>(num));
}

PackedPosition base_used(uint32_t num) {
    const auto used_bits = static_cast<uint16_t>(num >> 16);
    // DPDK virtio-user sends only the avail half (0x8000); DPDK then sets used = avail.
    return used_bits == 0 ? base_avail(num) : PackedPosition::decode(used_bits);
}

}  // namespace

BaseError validate_packed_vring_base(uint32_t num, uint16_t queue_size) {
    const PackedPosition avail = base_avail(num);
    const PackedPosition used = base_used(num);
    // hostile-input rule 1, vhost-user.rst SET_VRING_BASE: base & 0x7fff < queue size
    if (avail.index >= queue_size) {
        return BaseError::avail_index_out_of_range;
    }
    if (used.index >= queue_size) {
        return BaseError::used_index_out_of_range;
    }
    // virtio 1.2 §2.8: at most Queue Size buffers in flight, so used trails avail by <= a ring
    if (slots_between(used, avail, queue_size) > queue_size) {
        return BaseError::in_flight_exceeds_ring;
    }
    return BaseError::ok;
}

RingState PackedRing::state() const {
    const PackedRingLayout& l = layout_;
    RingState s;
    s.format = kName;
    s.size = size();
    s.last_avail_idx = avail_.encoded();
    s.last_used_idx = published_used_.encoded();
    s.cursor_encoding = "wrap counter in bit 15";
    if (l.desc == nullptr || l.driver_event == nullptr || l.device_event == nullptr ||
        l.size == 0) {
        return s;
    }
    s.guest.add("driver_event_flags", load_relaxed(l.driver_event->flags));
    s.guest.add("driver_event_off_wrap", load_relaxed(l.driver_event->off_wrap));
    s.guest.add("device_event_flags", load_relaxed(l.device_event->flags));
    s.guest.add("device_event_off_wrap", load_relaxed(l.device_event->off_wrap));
    // Is the descriptor at last_avail_idx available (work waiting)?
    s.guest.add_boolean("next_available", next_available());
    return s;
}

bool PackedRing::translate(const RingAddresses& addresses, uint32_t num,
                           const GuestMemoryMap& memory, Layout* out) {
    uint8_t* desc =
        translate_area(memory, addresses.desc, packed_desc_ring_bytes(num), kAlignment.desc);
    uint8_t* driver =
        translate_area(memory, addresses.driver, sizeof(PackedEventSuppress), kAlignment.driver);
    uint8_t* device =
        translate_area(memory, addresses.device, sizeof(PackedEventSuppress), kAlignment.device);
    if (desc == nullptr || driver == nullptr || device == nullptr) {
        return false;
    }
    out->desc = reinterpret_cast<PackedDesc*>(desc);
    out->driver_event = reinterpret_cast<PackedEventSuppress*>(driver);
    out->device_event = reinterpret_cast<PackedEventSuppress*>(device);
    out->size = static_cast<uint16_t>(num);  // 1..32768, checked at SET_VRING_NUM
    return true;
}

WrittenAreas PackedRing::written_areas(uint32_t num) {
    WrittenAreas w;
    w.items[w.count++] = {RingArea::desc, packed_desc_ring_bytes(num), false};
    w.items[w.count++] = {RingArea::device, sizeof(PackedEventSuppress), false};
    return w;
}

BaseError PackedRing::validate_vring_base(uint32_t base, std::optional<uint16_t> queue_size) {
    if (!queue_size.has_value()) {
        return BaseError::no_queue_size;
    }
    return validate_packed_vring_base(base, *queue_size);
}

InflightError PackedRing::recover_inflight(uint8_t* region, const Layout& layout, uint32_t base,
                                           bool fresh, Inflight* out) {
    PackedInflight tracker(reinterpret_cast<QueueRegionPacked*>(region), layout.size);
    if (const InflightError e = tracker.recover(layout.desc, base_used(base), fresh, &out->resume);
        e != InflightError::ok) {
        return e;
    }
    out->tracker = std::move(tracker);
    if (!out->resume.from_base) {
        const PackedResume& r = out->resume;
        const PackedPosition avail = advance(r.used, r.slots, layout.size);
        out->region_base = uint32_t{avail.encoded()} | uint32_t{r.used.encoded()} << 16;
    }
    return InflightError::ok;
}

PackedRing PackedRing::start(const Layout& layout, const RingConfig& config, uint32_t base,
                             const Inflight& inflight) {
    PackedRing ring(layout, config);
    ring.restore_vring_base(base);  // validated at SET_VRING_BASE and at start
    if (inflight.active()) {
        ring.track_inflight(inflight.tracker, inflight.resume);
    }
    return ring;
}

VringBasePositions PackedRing::decode_vring_base(uint32_t base) {
    const PackedPosition avail = base_avail(base);
    const PackedPosition used = base_used(base);
    VringBasePositions p;
    p.items[p.count++] = {"avail", avail.index, avail.wrap};
    p.items[p.count++] = {"used", used.index, used.wrap};
    return p;
}

BaseError PackedRing::restore_vring_base(uint32_t num) {
    if (const BaseError e = validate_packed_vring_base(num, layout_.size); e != BaseError::ok) {
        return e;
    }
    reset_positions(base_avail(num), base_used(num));
    device_flags_shadow_ = 0xffff;
    return BaseError::ok;
}

}  // namespace vnet::virtio
