// The device-side ring concept: what a virtio-net queue (VhostUserPort today)
// needs from a ring, whatever its format. Both models, SplitDeviceRing
// (virtio 1.2 §2.7) and PackedRing (§2.8), satisfy it; the datapath is meant
// to be a template over it, so a ring format is one file in this folder.
//
// The shape follows how the port drives a ring:
//   pop(iov, chain)     one CHAIN at a time: the model walks its own
//                       descriptors (split: avail entry + table walk;
//                       packed: consecutive slots and indirect tables) and
//                       returns the buffer id, the ring slots the chain used,
//                       and readable/writable segments in the caller's iovecs.
//                       too_many_segments leaves the chain where it was, so
//                       the caller can flush and retry with more room.
//   pop_burst(iov, chains, before)
//                       up to chains.size() chains in one call, as that many
//                       pops in a row would give them: their iovecs one after
//                       another in iov, stopping at the first pop that would
//                       not be ok, with that pop's status and ring effect
//                       (split: one pass over the avail entries and their
//                       head descriptors, a one-descriptor chain decided
//                       without the general walker; packed: pop in a loop).
//   skip(chain)         consumes the chain pop just refused with
//                       too_many_segments, without mapping any buffer: id and
//                       slots for a used entry (the caller completes it
//                       unsent; it can never give the chain more room).
//   position()/rewind() the RX path gives back chains it popped but did not
//                       fill. Given-back chains are not "new" for
//                       enable_notifications (the Linux 6.18 livelock).
//   add_used(id, slots, len) + publish_used()
//                       completions are staged and made visible once per
//                       burst (split: one used->idx store; packed: the first
//                       used descriptor's flags, stored last). Always called
//                       in the order the chains were popped (given-back ones
//                       excepted, which are popped again): VIRTIO_F_IN_ORDER
//                       relies on it.
//   should_notify()     after publish: does the driver want a call. Ask it
//                       once per publish; with nothing new since the last
//                       call the answer is model-specific (split without
//                       EVENT_IDX says yes, packed says no).
//   wants_call(more)    would a publish of `more` entries beyond those
//                       staged get a call: a hint read without a fence or
//                       a state change, for holding a burst back only
//                       while the guest sleeps (an awake guest is shown
//                       frames at once). should_notify still decides.
//   disable/enable_notifications()
//                       kick suppression; enable returns true if new work
//                       arrived meanwhile (disable again and keep polling).
//   vring_base() / restore_vring_base(num)
//                       GET_VRING_BASE / SET_VRING_BASE in vhost-user's
//                       encoding for the format. Call publish_used() first.
//   posted()            chains the driver posted that the ring has not taken
//                       (given-back ones included), for the RX path's hold
//                       and park decisions: the exact count when
//                       R::kExactPostedCount (split: avail idx minus ours),
//                       else 1 for "some" and 0 for "none" (packed: a
//                       count would walk the ring). A ring that counts
//                       exactly parks by comparing counts and may defer its
//                       calls while the guest has plenty posted; one that
//                       does not parks on enable_notifications().
//   untaken_chains()    the same from a fresh read of guest memory, exact,
//                       for the report of a stopping ring (cold: packed
//                       walks the flags).
//   state()             the cursors and the guest's fields for vnetctl show,
//                       by name (RingState).
//   R::decode_vring_base(base), R::validate_vring_base(base, size)
//                       a base read as named positions, for log lines; the
//                       rules SET_VRING_BASE checks (size: known or not yet).
//   R::kName            the format as vnetctl show names it ("split").
//   R::kDescription     the format, as the log names it ("split rings").
//   R::kFeature         the feature bit that selects the format (none for
//                       the default, split); see any_device_ring.hpp.
//   R::valid_queue_size(n), R::kAlignment, R::translate(addresses, num,
//   memory, &layout), R::written_areas(num)
//                       its areas before there is a ring (ring_areas.hpp):
//                       what SET_VRING_NUM/ADDR accept, the Layout a ring
//                       starts over, what dirty logging covers.
//   R::inflight_queue_bytes(size), R::init_inflight_region(region, size)
//                       its region of a vhost-user inflight buffer.
//   R::starting_base, R::recover_inflight, R::start, R::Inflight
//                       starting a ring: where it starts from the front
//                       end's base, the inflight region's recovery, and the
//                       ring built from layout, base and inflight state.
//
// Every model is single-owner (one worker thread), syscall-free and never
// allocates; the guest is the only other party.
#pragma once

#include <sys/uio.h>

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>

#include "virtio/features.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/inflight/split_inflight.hpp"
#include "virtio/ring/pop_status.hpp"
#include "virtio/ring/ring_areas.hpp"
#include "virtio/ring/ring_state.hpp"

namespace vnet::virtio {

// One popped chain. iovecs [0, readable_segments) are device-readable, then
// writable_segments device-writable ones.
struct PoppedChain {
    uint16_t id = 0;     // buffer id for add_used (split: the head index)
    uint16_t slots = 0;  // ring slots it occupied (split: 1; packed: descriptors in the ring)
    uint16_t readable_segments = 0;
    uint16_t writable_segments = 0;
    uint32_t readable_bytes = 0;
    uint32_t writable_bytes = 0;

    uint32_t segment_count() const { return uint32_t{readable_segments} + writable_segments; }
};

// One completion as add_used takes it: add_used_n's entries.
struct UsedEntry {
    uint16_t id = 0;
    uint16_t slots = 0;
    uint32_t len = 0;
};

// Any source of add_used_n's entries, as the concept below checks it.
struct UsedEntrySource {
    UsedEntry operator()(uint16_t) const { return {}; }
};

// What pop_burst did: `count` chains popped (ok), then `status`: empty,
// too_many_segments (that chain stays in the ring, as after pop) or the rule
// the guest broke; ok when the chains span was filled.
struct BurstPop {
    uint16_t count = 0;
    PopStatus status = PopStatus::ok;
};

// An avail-side position to rewind to: opaque to callers. Split: the
// free-running avail index; packed: slot index | avail wrap counter << 15.
struct RingPosition {
    uint16_t raw = 0;
    friend constexpr bool operator==(RingPosition, RingPosition) = default;
};

// What a ring needs besides its layout: negotiated features and the memory
// map descriptors are translated through (kept alive by the caller).
struct RingConfig {
    const GuestMemoryMap* memory = nullptr;
    bool indirect_allowed = false;  // VIRTIO_F_INDIRECT_DESC
    bool event_idx = false;         // VIRTIO_F_EVENT_IDX
    // VIRTIO_F_IN_ORDER: the driver expects buffers back in the order it made
    // them available, which is the only order add_used is ever called in
    // (the queues complete oldest first). The packed model then folds a run
    // of zero-length completions (a TX burst) into one used descriptor
    // carrying the run's last id (virtio 1.2 §2.8.20, DPDK's in-order
    // dequeue); the split model writes every entry, which the feature allows.
    bool in_order = false;
};

template <typename R>
concept DeviceRing = std::default_initializable<R> && std::movable<R> &&
    requires(R r, const R cr, std::span<iovec> iov, PoppedChain& chain,
             std::span<PoppedChain> chains, std::span<RingPosition> positions, RingPosition pos,
             uint16_t id, uint16_t slots, uint32_t len, uint32_t base,
             const RingAddresses& addresses, const GuestMemoryMap& memory,
             typename R::Layout* layout, uint8_t* region, typename R::Inflight* inflight,
             const RingConfig& config) {
    typename R::Layout;
    { cr.size() } -> std::same_as<uint16_t>;
    { r.pop(iov, chain) } -> std::same_as<PopStatus>;
    { r.pop_burst(iov, chains, positions) } -> std::same_as<BurstPop>;
    { r.skip(chain) } -> std::same_as<PopStatus>;
    { cr.position() } -> std::same_as<RingPosition>;
    { r.rewind(pos) } -> std::same_as<void>;
    { r.add_used(id, slots, len) } -> std::same_as<void>;
    { r.add_used_n(slots, UsedEntrySource{}) } -> std::same_as<void>;
    { r.publish_used() } -> std::same_as<void>;
    { r.should_notify() } -> std::same_as<bool>;
    { cr.wants_call(slots) } -> std::same_as<bool>;
    { r.disable_notifications() } -> std::same_as<void>;
    { r.enable_notifications() } -> std::same_as<bool>;
    { cr.vring_base() } -> std::same_as<uint32_t>;
    { r.restore_vring_base(base) } -> std::same_as<BaseError>;
    { r.posted() } -> std::same_as<uint16_t>;
    { cr.untaken_chains() } -> std::same_as<uint16_t>;
    { cr.state() } -> std::same_as<RingState>;
    requires std::same_as<decltype(R::kExactPostedCount), const bool>;
    requires std::same_as<decltype(R::kDescription), const char* const>;
    requires std::same_as<decltype(R::kName), const char* const>;
    requires std::same_as<decltype(R::kFeature), const std::optional<Feature>>;
    { R::decode_vring_base(base) } -> std::same_as<VringBasePositions>;
    { R::validate_vring_base(base, std::optional<uint16_t>{}) } -> std::same_as<BaseError>;
    { R::valid_queue_size(base) } -> std::same_as<bool>;
    requires std::same_as<decltype(R::kAlignment), const AreaAlignment>;
    { R::translate(addresses, base, memory, layout) } -> std::same_as<bool>;
    { R::written_areas(base) } -> std::same_as<WrittenAreas>;
    { R::inflight_queue_bytes(id) } -> std::same_as<uint64_t>;
    { R::init_inflight_region(region, id) } -> std::same_as<void>;
    typename R::Inflight;
    { R::starting_base(*layout, base) } -> std::same_as<uint32_t>;
    { R::recover_inflight(region, *layout, base, true, inflight) } -> std::same_as<InflightError>;
    { R::start(*layout, config, base, *inflight) } -> std::same_as<R>;
};

// pop_burst as a loop of pops: the packed model's, and the split model's
// while inflight tracking hands out resumed heads. `before`, when not empty
// (as long as `chains`, or one longer), gets position() before each chain
// looked at, the one that ended the burst included.
template <typename R>
BurstPop pop_one_by_one(R& ring, std::span<iovec> out, std::span<PoppedChain> chains,
                        std::span<RingPosition> before) {
    BurstPop result;
    size_t used = 0;
    while (result.count < chains.size()) {
        if (result.count < before.size()) {
            before[result.count] = ring.position();
        }
        PoppedChain& chain = chains[result.count];
        result.status = ring.pop(out.subspan(used), chain);
        if (result.status != PopStatus::ok) {
            return result;
        }
        used += chain.segment_count();
        ++result.count;
    }
    if (result.count < before.size()) {
        before[result.count] = ring.position();
    }
    return result;
}

}  // namespace vnet::virtio
