// Packed virtqueue, device side (virtio 1.2 §2.8). Owned by one worker
// thread at a time; the guest is the only other party, so every access to
// shared memory is an atomic with a stated ordering, and no locks.
//
//   pop            walks the chain at the avail position: consecutive slots
//                  linked by NEXT, or one indirect table, each descriptor
//                  read once into a local before any check.
//   add_used       writes a used descriptor (id, len, flags) at the used
//                  position and skips the chain's slots; the FIRST one of a
//                  burst keeps its old flags until publish_used, which stores
//                  them last with release: one store shows the guest the
//                  whole burst (§2.8.9; DPDK's shadow flush does the same).
//                  With VIRTIO_F_IN_ORDER a zero-length completion that
//                  follows another in the same burst only rewrites that
//                  descriptor's id: one used descriptor for a run of
//                  buffers, the last one's id (§2.8.20).
//   should_notify  reads the driver event suppression area (ENABLE /
//                  DISABLE / DESC with EVENT_IDX).
//   enable/disable_notifications  write the device event suppression area.
//
// The size need not be a power of two; positions are (index, wrap) pairs.
//
// Inflight tracking (INFLIGHT_SHMFD, track_inflight): every chain popped is
// recorded in a PackedInflight, and the chains a previous back end took and
// never completed are handed out first, from the copies recovery made: they
// take the positions [used, used + their slots) of a resume window, the
// ring's avail side reads no slot there, and new chains start after it.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <span>

#include "virtio/features.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/inflight/packed_inflight.hpp"
#include "virtio/ring/device_ring.hpp"
#include "virtio/ring/packed_layout.hpp"
#include "virtio/ring/ring_areas.hpp"

namespace vnet::virtio {

class ChainSegments;

class PackedRing {
public:
    using Layout = PackedRingLayout;
    static constexpr const char* kName = "packed";
    static constexpr const char* kDescription = "packed rings (VIRTIO_F_RING_PACKED negotiated)";
    static constexpr std::optional<Feature> kFeature = Feature::ring_packed;

    PackedRing() = default;
    // Starts at avail = used = slot 0, wrap 1 (a fresh ring, vring base 0x8000);
    // restore_vring_base moves both.
    PackedRing(const PackedRingLayout& layout, const RingConfig& config);

    const PackedRingLayout& layout() const { return layout_; }
    uint16_t size() const { return layout_.size; }
    PackedPosition avail_position() const { return avail_; }
    PackedPosition used_position() const { return used_; }  // includes staged entries
    PackedPosition published_used_position() const { return published_used_; }

    PopStatus pop(std::span<iovec> out, PoppedChain& chain);
    // A chain's slots and flags are only known by walking it: a loop of pops.
    BurstPop pop_burst(std::span<iovec> out, std::span<PoppedChain> chains,
                       std::span<RingPosition> before) {
        return pop_one_by_one(*this, out, chains, before);
    }
    // Consumes the chain at the avail position without mapping its buffers
    // (see DeviceRing): the same slot, id and in-flight checks as pop.
    PopStatus skip(PoppedChain& chain);
    // Is the descriptor at the avail position available (given-back chains
    // included)? One acquire load; the ring does not change.
    bool next_available() const;
    // Chains the driver made available from the avail position on (given-back
    // ones included): walks the ring's flags, so for cold paths only (a
    // stopping ring reports what it leaves untaken).
    uint16_t untaken_chains() const;
    // No count without walking the flags: 1 if the next slot is available,
    // else 0 (see DeviceRing::posted).
    static constexpr bool kExactPostedCount = false;
    uint16_t posted() const { return next_available() ? 1 : 0; }
    RingState state() const;
    // A base as log lines name it: avail and used, each with its wrap
    // counter, read as restore_vring_base reads it (a used half of 0, as
    // DPDK virtio-user sends, means used = avail).
    static VringBasePositions decode_vring_base(uint32_t base);
    // validate_packed_vring_base against the queue size, which must be known.
    static BaseError validate_vring_base(uint32_t base, std::optional<uint16_t> queue_size);

    // Its areas (ring_areas.hpp), virtio 1.2 §2.8.10.1: the descriptor ring
    // (16 bytes an entry, 16-aligned) and the driver and device event
    // suppression areas (4 bytes each, 4-aligned); any size up to 32768.
    static bool valid_queue_size(uint32_t n) { return is_valid_packed_queue_size(n); }
    static constexpr AreaAlignment kAlignment{kPackedDescAlign, kPackedEventAlign,
                                              kPackedEventAlign};
    static bool translate(const RingAddresses& addresses, uint32_t num,
                          const GuestMemoryMap& memory, Layout* out);
    // Used descriptors are written over the descriptor ring, and the device
    // event area is ours (§2.8.10).
    static WrittenAreas written_areas(uint32_t num);
    // Its region of an inflight buffer (vhost-user.rst, packed virtqueue).
    static uint64_t inflight_queue_bytes(uint16_t queue_size) {
        return packed_inflight_queue_bytes(queue_size);
    }
    static void init_inflight_region(uint8_t* region, uint16_t queue_size) {
        init_packed_inflight_region(reinterpret_cast<QueueRegionPacked*>(region), queue_size);
    }

    // Starting a ring (see SplitDeviceRing): the tracker and the chains to
    // resubmit, and where the region says the ring is when it says so.
    struct Inflight {
        PackedInflight tracker;
        PackedResume resume;
        std::optional<uint32_t> region_base;
        bool active() const { return tracker.active(); }
        uint32_t resumed() const { return static_cast<uint32_t>(resume.chains.size()); }
    };
    // The base as given: a packed base carries both positions.
    static uint32_t starting_base(const Layout& /*layout*/, uint32_t base) { return base; }
    // Recovers the ring's region of an inflight buffer, the base's used half
    // read as restore_vring_base reads it; `fresh`: made by our
    // GET_INFLIGHT_FD, its positions are a new ring's. Reads and writes the
    // descriptor ring: the caller guards it.
    static InflightError recover_inflight(uint8_t* region, const Layout& layout, uint32_t base,
                                          bool fresh, Inflight* out);
    static PackedRing start(const Layout& layout, const RingConfig& config, uint32_t base,
                            const Inflight& inflight);

    RingPosition position() const { return RingPosition{avail_.encoded()}; }
    // Gives back every chain popped since `to` was taken from position().
    void rewind(RingPosition to);

    // `slots` is the popped chain's PoppedChain::slots (clamped to 1..size).
    void add_used(uint16_t id, uint16_t slots, uint32_t len);
    // add_used for `count` entries, `entry(i)` giving the i-th (a UsedEntry):
    // entry by entry (the split model's batch is what its loop saves).
    template <typename Entry>
    void add_used_n(uint16_t count, Entry entry) {
        for (uint16_t i = 0; i < count; ++i) {
            const UsedEntry e = entry(i);
            add_used(e.id, e.slots, e.len);
        }
    }
    void publish_used();

    // Cold, at start after restore_vring_base: from here on every chain is
    // recorded in `tracker`, and `resume` (recover()'s) is handed out first.
    // Unless the region was fresh, its positions replace the vring base's.
    void track_inflight(PackedInflight tracker, PackedResume resume);
    const PackedInflight& inflight() const { return inflight_; }
    const PackedResume& resume() const { return resume_; }

    bool should_notify();
    // The hint of DeviceRing::wants_call: `more` used descriptors beyond
    // those staged, without a fence or a state change.
    bool wants_call(uint16_t more) const;
    void disable_notifications();
    bool enable_notifications();

    // vhost-user.rst: bits 0-14 last avail idx, bit 15 avail wrap counter,
    // bits 16-30 used idx, bit 31 used wrap counter (the published used side).
    uint32_t vring_base() const;
    // Validates `num` completely, then resets every cursor to it. Upper 16
    // bits 0 (DPDK virtio-user sends only the avail half) means used = avail.
    // That makes "used at slot 0, wrap 0" ambiguous: export only with nothing
    // in flight (as the port's stop does), then used = avail anyway.
    BaseError restore_vring_base(uint32_t num);

private:
    // The ring stands at `avail` taken and `used` completed, nothing staged
    // or signalled since (a vring base, or a recovered inflight region).
    void reset_positions(PackedPosition avail, PackedPosition used);
    PopStatus add_indirect(uint64_t addr, uint32_t len, ChainSegments& segments);
    PopStatus add_desc(uint64_t addr, uint32_t len, uint16_t flags, uint32_t slots,
                       ChainSegments& segments);
    // Inflight helpers (only while tracking or resuming).
    bool resume_pending() const { return resume_next_ < resume_.chains.size(); }
    PopStatus pop_resumed(std::span<iovec>* out, PoppedChain& chain);
    PopStatus take_tracked(uint16_t slots, uint16_t id);
    void rewind_tracked(uint32_t back);
    void add_used_tracked(uint16_t id, uint16_t slots);
    void note_chain_seen(PackedPosition head, uint16_t flags, uint32_t slots_so_far);

    PackedRingLayout layout_{};
    const GuestMemoryMap* memory_ = nullptr;
    size_t region_hint_ = 0;
    bool indirect_allowed_ = false;
    bool event_idx_ = false;

    PackedPosition avail_{};           // next slot to pop
    uint16_t given_back_ = 0;          // slots from avail_ on that rewind returned (seen before)
    PackedPosition used_{};            // next used slot, staged entries included
    PackedPosition published_used_{};  // what the guest can see
    PackedPosition batch_head_{};      // first used slot of the staged burst
    uint16_t batch_head_flags_ = 0;    // its flags, stored by publish_used
    uint16_t staged_ = 0;              // used descriptors written since the last publish
    uint32_t staged_slots_ = 0;
    bool in_order_ = false;         // VIRTIO_F_IN_ORDER: zero-length runs share a descriptor
    PackedPosition last_staged_{};  // the used descriptor add_used wrote last
    bool last_staged_zero_length_ = false;  // ... and a run may fold into it
    PackedPosition signalled_{};            // published used position at the last should_notify
    uint32_t unsignalled_slots_ = 0;        // slots published since then (capped)
    bool signalled_valid_ = false;
    uint16_t device_flags_shadow_ = 0xffff;  // last flags we stored in the device area

    PackedInflight inflight_;
    PackedResume resume_;       // window [resume_.used, + resume_.slots), oldest chain first
    size_t resume_next_ = 0;    // next chain of the window to hand out
    bool window_open_ = false;  // a rewind may still reach into the window
    uint32_t window_used_ = 0;  // slots completed since the start, while open
};

static_assert(DeviceRing<PackedRing>);

// The checks restore_vring_base makes, for SET_VRING_BASE time (the ring
// object is built later, when the queue starts): hostile-input rule 1.
BaseError validate_packed_vring_base(uint32_t num, uint16_t queue_size);

}  // namespace vnet::virtio
