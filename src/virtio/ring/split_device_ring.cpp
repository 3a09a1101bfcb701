#include "virtio/ring/split_device_ring.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {

namespace {

// A walked split chain as the queues see it: one ring slot, whatever its length.
PoppedChain popped_from(uint16_t head, const DescriptorChain& walked) {
    PoppedChain chain;
    chain.id = head;
    chain.slots = 1;
    chain.readable_segments = static_cast<uint16_t>(walked.readable_segments);
    chain.writable_segments = static_cast<uint16_t>(walked.writable_segments);
    chain.readable_bytes = walked.readable_bytes;
    chain.writable_bytes = walked.writable_bytes;
    return chain;
}

}  // namespace

SplitDeviceRing::SplitDeviceRing(const SplitRingLayout& layout, const RingConfig& config,
                                 uint16_t used_idx)
    : ring_(layout, 0, used_idx, config.event_idx),
      memory_(config.memory),
      indirect_allowed_(config.indirect_allowed),
      event_idx_(config.event_idx) {}

PopStatus SplitDeviceRing::pop(std::span<iovec> out, PoppedChain& chain) {
    if (ring_.size() == 0) [[unlikely]] {
        return PopStatus::empty;
    }
    uint16_t head = 0;
    PopStatus ring_error = PopStatus::ok;
    if (ring_.pop_avail(std::span<uint16_t>(&head, 1), &ring_error) == 0) {
        return ring_error == PopStatus::ok ? PopStatus::empty : ring_error;
    }
    const bool tracked = inflight_.active();
    if (tracked) [[unlikely]] {
        head = resumed_head(static_cast<uint16_t>(ring_.last_avail_idx() - 1), head);
    }
    // Built per pop: the context points at region_hint_, which must follow this object.
    const ChainWalkContext walk{ring_.layout().desc, ring_.size(), indirect_allowed_, memory_,
                                &region_hint_};
    DescriptorChain walked;
    const PopStatus e = walk_descriptor_chain(walk, head, out, walked);
    if (e != PopStatus::ok) [[unlikely]] {
        if (e == PopStatus::too_many_segments) {
            // Stays in the ring for a retry, as seen (given back): same contract as packed.
            ring_.unpop_avail(1);
        }
        return e;
    }
    if (tracked) [[unlikely]] {
        mark_taken(static_cast<uint16_t>(ring_.last_avail_idx() - 1), head);
    }
    chain = popped_from(head, walked);
    return PopStatus::ok;
}

BurstPop SplitDeviceRing::pop_burst(std::span<iovec> out, std::span<PoppedChain> chains,
                                    std::span<RingPosition> before) {
    if (ring_.size() == 0 || inflight_.active()) [[unlikely]] {
        return pop_one_by_one(*this, out, chains, before);  // resumed heads replace avail entries
    }
    const uint16_t start = ring_.last_avail_idx();
    const auto want = static_cast<uint16_t>(std::min<size_t>(chains.size(), UINT16_MAX));
    BurstPop result;
    size_t used = 0;
    while (result.count < want) {
        // The index is re-read only once the cached one is used up, as pop's.
        PopStatus ring_error = PopStatus::ok;
        const uint16_t available = ring_.avail_count(&ring_error);
        if (available == 0) {
            result.status = ring_error == PopStatus::ok ? PopStatus::empty : ring_error;
            break;
        }
        const auto n = static_cast<uint16_t>(std::min<size_t>(available, want - result.count));
        const BurstPop part = take_heads(n, out, used, chains, result.count);
        result.count = static_cast<uint16_t>(result.count + part.count);
        result.status = part.status;
        if (part.status != PopStatus::ok) {
            break;
        }
    }
    // One chain per avail entry: the position before chain i is start + i,
    // and before a refused one it is where the ring stood before taking it.
    const size_t positions = std::min<size_t>(before.size(), size_t{result.count} + 1);
    for (size_t i = 0; i < positions; ++i) {
        before[i] = RingPosition{static_cast<uint16_t>(start + i)};
    }
    return result;
}

BurstPop SplitDeviceRing::take_heads(uint16_t n, std::span<iovec> out, size_t& used,
                                     std::span<PoppedChain> chains, uint16_t first) {
    const SplitRingLayout& layout = ring_.layout();
    const uint16_t at = ring_.last_avail_idx();
    size_t next = used;
    uint16_t i = 0;
    while (true) {
        // One-descriptor heads in a run, one iovec each.
        const uint16_t run =
            take_direct_run(layout, static_cast<uint16_t>(at + i), static_cast<uint16_t>(n - i),
                            out.subspan(next), chains.subspan(first + i));
        i = static_cast<uint16_t>(i + run);
        next += run;
        if (i == n) {
            break;
        }
        // The head the run stopped at, read afresh and decided with every
        // rule: the run only declined it, it decided nothing on its copy.
        const uint16_t head =
            shared::load_relaxed(layout.avail->ring[(at + i) & (layout.size - 1u)]);
        // virtio 1.2 §2.7.6: ring entries are descriptor-chain heads; vhost: "Guest says index".
        // As pop_avail: the entry is not taken.
        if (head >= layout.size) [[unlikely]] {
            ring_.take_avail(i);
            used = next;
            return {i, PopStatus::head_out_of_range};
        }
        PoppedChain& chain = chains[first + i];
        const PopStatus e =
            walk_head(head, read_descriptor_once(&layout.desc[head]), out.subspan(next), chain);
        if (e != PopStatus::ok) [[unlikely]] {
            // As pop: the refused chain is taken; too_many_segments gives it
            // back at once, seen, for a retry.
            ring_.take_avail(static_cast<uint16_t>(i + 1));
            if (e == PopStatus::too_many_segments) {
                ring_.unpop_avail(1);
            }
            used = next;
            return {i, e};
        }
        next += chain.segment_count();
        ++i;
    }
    ring_.take_avail(n);
    used = next;
    return {n, PopStatus::ok};
}

uint16_t SplitDeviceRing::take_direct_run(const SplitRingLayout& layout, uint16_t from, uint16_t n,
                                          std::span<iovec> out,
                                          std::span<PoppedChain> chains) const {
    // Everything the loop reads, in scalar locals and arguments: stores
    // into `out` and `chains` could alias the members, and the compiler
    // would reload them for every chain; with nothing but this loop in the
    // function, its values stay in registers. As few of them as the loop
    // can do with: the region as a struct, the ring size beside its mask,
    // a count beside the position and the region's end beside its size
    // were each a stack load per chain (the loop: 55 instructions a chain
    // with them, 49 without).
    const HintedRegion region = hinted_region();  // size 0: none, the run takes nothing
    const uint64_t region_gpa = region.gpa;
    const uint64_t region_size = region.size;
    uint8_t* const region_host = region.host;
    const VirtqDesc* table = layout.desc;
    // Aligned once, aligned for every entry (16-byte descriptors): a
    // misaligned table is left to the walker's byte-wise reads.
    if ((reinterpret_cast<uintptr_t>(table) & 7) != 0) [[unlikely]] {
        return 0;
    }
    const uint16_t* avail = layout.avail->ring;
    // A power of two: the index wraps with the 16-bit count, and a head
    // below the size is one no greater than the mask.
    const uint32_t mask = layout.size - 1u;
    const auto limit = static_cast<uint16_t>(std::min<size_t>(n, out.size()));
    iovec* iov = out.data();
    PoppedChain* chain = chains.data();
    const uint32_t end = uint32_t{from} + limit;
    uint32_t at = from;
    for (; at != end; ++at, ++iov, ++chain) {
        const uint16_t head = shared::load_relaxed(avail[at & mask]);
        if (head > mask) [[unlikely]] {
            break;
        }
        // Read once; everything below decides on this copy.
        const VirtqDesc d = read_aligned_descriptor_once(&table[head]);
        // A chain of one direct, non-empty descriptor inside the hinted
        // region: of all the rules only the mapping could fail (neither the
        // order rule nor the 2^32 limit can be broken by one u32 buffer),
        // and it cannot. The same iovec and chain the walker gives.
        const uint64_t offset = d.addr - region_gpa;
        const uint32_t len = d.len;
        const uint32_t flags = d.flags;
        // Inside the region: a non-empty buffer no bigger than it, starting
        // no later than its size from its end (offset < size follows).
        if ((flags & (VirtqDesc::kFlagIndirect | VirtqDesc::kFlagNext)) != 0 || len == 0 ||
            len > region_size || offset > region_size - len) [[unlikely]] {
            break;
        }
        *iov = iovec{region_host + offset, len};
        // 1 for a device-writable buffer, 0 for a readable one: its one
        // segment and its bytes counted on that side, without a branch.
        const uint32_t writable = (flags / VirtqDesc::kFlagWrite) & 1u;
        PoppedChain c;
        c.id = head;
        c.slots = 1;
        c.readable_segments = static_cast<uint16_t>(writable ^ 1u);
        c.writable_segments = static_cast<uint16_t>(writable);
        c.readable_bytes = len & (writable - 1u);
        c.writable_bytes = len & (0u - writable);
        *chain = c;
    }
    return static_cast<uint16_t>(at - from);
}

SplitDeviceRing::HintedRegion SplitDeviceRing::hinted_region() const {
    const std::span<const GuestRegion> regions = memory_->regions();
    if (region_hint_ >= regions.size()) {
        return {};
    }
    const GuestRegion& r = regions[region_hint_];
    return {r.guest_phys_addr, r.size, r.host_addr};
}

PopStatus SplitDeviceRing::walk_head(uint16_t head, VirtqDesc d, std::span<iovec> out,
                                     PoppedChain& chain) {
    const ChainWalkContext walk{ring_.layout().desc, ring_.size(), indirect_allowed_, memory_,
                                &region_hint_};
    DescriptorChain walked;
    const PopStatus e = walk_descriptor_chain_from(walk, head, d, out, walked);
    if (e != PopStatus::ok) {
        return e;
    }
    chain = popped_from(head, walked);
    return PopStatus::ok;
}

PopStatus SplitDeviceRing::skip(PoppedChain& chain) {
    if (ring_.size() == 0) [[unlikely]] {
        return PopStatus::empty;
    }
    uint16_t head = 0;
    PopStatus ring_error = PopStatus::ok;
    if (ring_.pop_avail(std::span<uint16_t>(&head, 1), &ring_error) == 0) {
        return ring_error == PopStatus::ok ? PopStatus::empty : ring_error;
    }
    if (inflight_.active()) [[unlikely]] {
        const auto at = static_cast<uint16_t>(ring_.last_avail_idx() - 1);
        head = resumed_head(at, head);
        mark_taken(at, head);
    }
    chain = PoppedChain{};
    chain.id = head;  // pop_avail checked it against the queue size
    chain.slots = 1;
    return PopStatus::ok;
}

void SplitDeviceRing::rewind(RingPosition to) {
    const auto count = static_cast<uint16_t>(ring_.last_avail_idx() - to.raw);
    // A position from position() is at most a ring's worth behind (see PackedRing::rewind).
    if (count > ring_.size()) [[unlikely]] {
        return;
    }
    if (inflight_.active()) [[unlikely]] {
        // Given back unused: no longer in flight, unless it is a resumed
        // head, which stays in flight until it is completed.
        for (uint16_t at = to.raw; at != ring_.last_avail_idx(); ++at) {
            if (in_resume_window(at)) {
                continue;
            }
            // The entry pop read; the guest may have rewritten it since.
            const uint16_t head = shared::load_relaxed(ring_.layout().avail->ring[at % size()]);
            if (head < size()) {
                inflight_.give_back(head);
            }
        }
    }
    ring_.unpop_avail(count);
}

void SplitDeviceRing::track_inflight(SplitInflight tracker, std::vector<uint16_t> resume) {
    inflight_ = tracker;
    resume_ = std::move(resume);
    resume_start_ = ring_.last_avail_idx();
    resume_used_ = 0;
}

bool SplitDeviceRing::in_resume_window(uint16_t at) const {
    return static_cast<uint16_t>(at - resume_start_) < resume_.size();
}

uint16_t SplitDeviceRing::resumed_head(uint16_t at, uint16_t head) const {
    return in_resume_window(at) ? resume_[static_cast<uint16_t>(at - resume_start_)] : head;
}

void SplitDeviceRing::mark_taken(uint16_t at, uint16_t head) {
    if (!in_resume_window(at)) {  // a resumed head is in flight already, with its counter
        inflight_.take(head);
    }
}

uint16_t SplitDeviceRing::untaken_chains() const {
    if (ring_.size() == 0) {
        return 0;
    }
    // A fresh read: avail_count() may answer from its cached index.
    const uint16_t avail_idx = shared::load_acquire(ring_.layout().avail->idx);
    const auto untaken = static_cast<uint16_t>(avail_idx - ring_.last_avail_idx());
    return untaken > ring_.size() ? 0 : untaken;  // a guest that broke the rules: nothing to report
}

RingState SplitDeviceRing::state() const {
    const SplitRingLayout& l = ring_.layout();
    RingState s;
    s.format = kName;
    s.size = ring_.size();
    s.last_avail_idx = ring_.last_avail_idx();
    s.last_used_idx = ring_.used_idx();
    if (l.avail == nullptr || l.used == nullptr || l.size == 0) {
        return s;  // a ring that never started
    }
    // acquire: as the datapath reads avail->idx before the entries it covers.
    s.guest.add("avail_flags", shared::load_relaxed(l.avail->flags));
    s.guest.add("avail_idx", shared::load_acquire(l.avail->idx));
    s.guest.add("used_flags", shared::load_relaxed(l.used->flags));
    s.guest.add("used_idx", shared::load_relaxed(l.used->idx));
    if (ring_.event_idx()) {
        // virtio 1.2 §2.7.10: used_event follows avail->ring[size] and
        // avail_event follows used->ring[size], inside the validated areas.
        s.guest.add("used_event", shared::load_relaxed(l.avail->ring[l.size]));
        const auto* avail_event =
            static_cast<const uint16_t*>(static_cast<const void*>(&l.used->ring[l.size]));
        s.guest.add("avail_event", shared::load_relaxed(*avail_event));
    }
    return s;
}

bool SplitDeviceRing::translate(const RingAddresses& addresses, uint32_t num,
                                const GuestMemoryMap& memory, Layout* out) {
    uint8_t* desc = translate_area(memory, addresses.desc, desc_table_bytes(num), kAlignment.desc);
    uint8_t* avail =
        translate_area(memory, addresses.driver, avail_ring_bytes(num), kAlignment.driver);
    uint8_t* used =
        translate_area(memory, addresses.device, used_ring_bytes(num), kAlignment.device);
    if (desc == nullptr || avail == nullptr || used == nullptr) {
        return false;
    }
    out->desc = reinterpret_cast<VirtqDesc*>(desc);
    out->avail = reinterpret_cast<VirtqAvail*>(avail);
    out->used = reinterpret_cast<VirtqUsed*>(used);
    out->size = static_cast<uint16_t>(num);  // <= 32768, checked at SET_VRING_NUM
    return true;
}

WrittenAreas SplitDeviceRing::written_areas(uint32_t num) {
    WrittenAreas w;
    w.items[w.count++] = {RingArea::device, used_ring_bytes(num), true};
    return w;
}

BaseError SplitDeviceRing::validate_vring_base(uint32_t base, std::optional<uint16_t>) {
    return base > UINT16_MAX ? BaseError::wider_than_format : BaseError::ok;
}

uint32_t SplitDeviceRing::starting_base(const Layout& layout, uint32_t /*base*/) {
    return shared::load_acquire(layout.used->idx);
}

InflightError SplitDeviceRing::recover_inflight(uint8_t* region, const Layout& layout,
                                                uint32_t base, bool /*fresh*/, Inflight* out) {
    SplitInflight tracker(reinterpret_cast<QueueRegionSplit*>(region), layout.size);
    if (const InflightError e = tracker.recover(static_cast<uint16_t>(base), &out->resume);
        e != InflightError::ok) {
        return e;
    }
    out->tracker = tracker;
    return InflightError::ok;
}

SplitDeviceRing SplitDeviceRing::start(const Layout& layout, const RingConfig& config,
                                       uint32_t base, const Inflight& inflight) {
    SplitDeviceRing ring(layout, config, static_cast<uint16_t>(base));
    ring.restore_vring_base(base);  // validated at SET_VRING_BASE
    if (inflight.active()) {
        ring.track_inflight(inflight.tracker, inflight.resume);
    }
    return ring;
}

VringBasePositions SplitDeviceRing::decode_vring_base(uint32_t base) {
    VringBasePositions p;
    p.items[p.count++] = {"avail", static_cast<uint16_t>(base), std::nullopt};
    return p;
}

BaseError SplitDeviceRing::restore_vring_base(uint32_t num) {
    if (const BaseError e = validate_vring_base(num, ring_.size()); e != BaseError::ok) {
        return e;
    }
    ring_ = SplitRing(ring_.layout(), static_cast<uint16_t>(num), ring_.used_idx(), event_idx_);
    return BaseError::ok;
}

}  // namespace vnet::virtio
