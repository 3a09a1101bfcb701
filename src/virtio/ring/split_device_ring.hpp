// The split ring model of DeviceRing (virtio 1.2 §2.7): SplitRing keeps the
// avail and used indexes, walk_descriptor_chain walks a head's chain, and
// this class joins them: one chain per pop, a burst in one pass,
// position/rewind over unpop_avail, the vring base in the split encoding
// (the 16-bit last avail index) and inflight tracking.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "virtio/features.hpp"
#include "virtio/inflight/split_inflight.hpp"
#include "virtio/ring/descriptor_chain.hpp"
#include "virtio/ring/device_ring.hpp"
#include "virtio/ring/ring_areas.hpp"
#include "virtio/ring/split_ring.hpp"

namespace vnet::virtio {

class SplitDeviceRing {
public:
    using Layout = SplitRingLayout;
    static constexpr const char* kName = "split";
    static constexpr const char* kDescription = "split rings";
    // The format without a feature bit: the one a device runs unless another
    // model's kFeature is negotiated.
    static constexpr std::optional<Feature> kFeature = std::nullopt;

    SplitDeviceRing() = default;
    // `used_idx` is where the next used entry goes: the guest's used->idx at
    // start-up (the split vring base does not carry it). Avail starts at 0.
    SplitDeviceRing(const SplitRingLayout& layout, const RingConfig& config, uint16_t used_idx);

    SplitRing& split() { return ring_; }
    const SplitRing& split() const { return ring_; }
    uint16_t size() const { return ring_.size(); }

    PopStatus pop(std::span<iovec> out, PoppedChain& chain);
    // One pass over the burst's avail entries and head descriptors: a head
    // descriptor without NEXT or INDIRECT whose buffer lies in the hinted
    // region is decided here, anything else goes to the general walker
    // with the descriptor already read. Same chains, statuses and ring
    // state as pop in a loop (see DeviceRing).
    BurstPop pop_burst(std::span<iovec> out, std::span<PoppedChain> chains,
                       std::span<RingPosition> before);
    // Takes the next head without walking its chain (see DeviceRing).
    PopStatus skip(PoppedChain& chain);

    RingPosition position() const { return RingPosition{ring_.last_avail_idx()}; }
    void rewind(RingPosition to);

    // Inflight tracking (vhost-user INFLIGHT_SHMFD), cold, at start after
    // restore_vring_base: every chain taken from here on is marked in
    // `tracker`, and the first resume.size() pops hand out `resume` (heads a
    // previous back end took and never completed, oldest first) instead of
    // what the avail entries at those positions say. The base must be the
    // used index, so the window ends where the dead back end stopped taking.
    void track_inflight(SplitInflight tracker, std::vector<uint16_t> resume);
    const SplitInflight& inflight() const { return inflight_; }
    const std::vector<uint16_t>& resume() const { return resume_; }

    // `slots` is unused: a split chain always takes one used entry.
    void add_used(uint16_t id, uint16_t /*slots*/, uint32_t len) {
        ring_.add_used(id, len);
        if (inflight_.active()) [[unlikely]] {
            inflight_.add_used(id);
            close_resume_window_once_used();
        }
    }
    // add_used for `count` entries, `entry(i)` giving the i-th (a UsedEntry):
    // one pass with the ring's fields in registers (SplitRing::add_used_n),
    // entry by entry only while inflight tracking marks each one.
    template <typename Entry>
    void add_used_n(uint16_t count, Entry entry) {
        if (inflight_.active()) [[unlikely]] {
            for (uint16_t i = 0; i < count; ++i) {
                const UsedEntry e = entry(i);
                add_used(e.id, e.slots, e.len);
            }
            return;
        }
        ring_.add_used_n(count, [&](uint16_t i) {
            const UsedEntry e = entry(i);
            return SplitUsedEntry{e.id, e.len};
        });
    }
    void publish_used() {
        ring_.publish_used();
        if (inflight_.active()) [[unlikely]] {
            inflight_.published(ring_.used_idx());
        }
    }

    bool should_notify() { return ring_.should_notify(); }
    bool wants_call(uint16_t more) const { return ring_.wants_call(more); }
    void disable_notifications() { ring_.disable_notifications(); }
    bool enable_notifications() { return ring_.enable_notifications(); }

    // The avail index counts what the driver posted: exact, and cheap
    // (re-read only once the cached one is used up).
    static constexpr bool kExactPostedCount = true;
    uint16_t posted() {
        PopStatus jumped = PopStatus::ok;  // a bad index: reported by the next pop
        return ring_.avail_count(&jumped);
    }
    uint16_t untaken_chains() const;
    RingState state() const;
    // A base as log lines name it: the avail index.
    static VringBasePositions decode_vring_base(uint32_t base);
    // vhost-user.rst: the split base is a 16-bit avail index; more bits are a
    // confused peer. Needs no queue size.
    static BaseError validate_vring_base(uint32_t base, std::optional<uint16_t> queue_size);

    // Its areas (ring_areas.hpp), virtio 1.2 §2.7: a descriptor table, the
    // avail ring and the used ring; a power-of-two size up to 32768.
    static bool valid_queue_size(uint32_t n) { return is_valid_split_queue_size(n); }
    static constexpr AreaAlignment kAlignment{kDescTableAlign, kAvailRingAlign, kUsedRingAlign};
    static bool translate(const RingAddresses& addresses, uint32_t num,
                          const GuestMemoryMap& memory, Layout* out);
    // The used ring (flags, idx, entries, avail_event), logged where
    // SET_VRING_ADDR's log address says when it gives one.
    static WrittenAreas written_areas(uint32_t num);
    // Its region of an inflight buffer (vhost-user.rst, split virtqueue).
    static uint64_t inflight_queue_bytes(uint16_t queue_size) {
        return split_inflight_queue_bytes(queue_size);
    }
    static void init_inflight_region(uint8_t* region, uint16_t queue_size) {
        init_split_inflight_region(reinterpret_cast<QueueRegionSplit*>(region), queue_size);
    }

    // Starting a ring (the device, when the front end has set it up):
    // what a started ring carries to each snapshot while an inflight buffer
    // covers it: the tracker, and the heads a previous back end took and
    // never completed, oldest first.
    struct Inflight {
        SplitInflight tracker;
        std::vector<uint16_t> resume;
        std::optional<uint32_t> region_base;  // never: the region holds no avail position
        bool active() const { return tracker.active(); }
        uint32_t resumed() const { return static_cast<uint32_t>(resume.size()); }
    };
    // Where a ring over `layout` starts given the front end's base: the
    // guest's used->idx (the DPDK/rust-vmm reconnect rule: a base that
    // disagrees, as virtio-user's 0 always does, follows it). Reads guest
    // memory: the caller guards it.
    static uint32_t starting_base(const Layout& layout, uint32_t base);
    // Recovers the ring's region of an inflight buffer, at `base` (the
    // used index). `fresh` (made by our GET_INFLIGHT_FD) changes nothing here.
    static InflightError recover_inflight(uint8_t* region, const Layout& layout, uint32_t base,
                                          bool fresh, Inflight* out);
    // The ring handed to the dataplane: over `layout` at `base` (avail and
    // used alike, as starting_base made them), tracking `inflight` if active.
    static SplitDeviceRing start(const Layout& layout, const RingConfig& config, uint32_t base,
                                 const Inflight& inflight);

    // vhost-user.rst: for split rings the base is the next avail index.
    uint32_t vring_base() const { return ring_.last_avail_idx(); }
    // Restarts avail at `num`; the used index stays where it is.
    BaseError restore_vring_base(uint32_t num);

private:
    // pop_burst over `n` heads the avail index covers, from chains[first].
    BurstPop take_heads(uint16_t n, std::span<iovec> out, size_t& used,
                        std::span<PoppedChain> chains, uint16_t first);
    // take_heads' common case: from avail position `from`, up to `n` heads
    // that are each one direct, non-empty descriptor inside the hinted
    // region, one iovec in `out` and one chain in `chains` each. Returns
    // how many; it stops, taking nothing of it, at any other head (out of
    // range, chained, indirect, empty, outside the hint) or when `out` is
    // full, for the general path to decide. Takes nothing from the ring.
    uint16_t take_direct_run(const SplitRingLayout& layout, uint16_t from, uint16_t n,
                             std::span<iovec> out, std::span<PoppedChain> chains) const;
    // The memory region the hint names, as take_heads checks buffers
    // against it (size 0: no region, every buffer goes to the walker).
    struct HintedRegion {
        uint64_t gpa = 0;
        uint64_t size = 0;
        uint8_t* host = nullptr;
    };
    HintedRegion hinted_region() const;
    // Any head take_heads does not decide itself: the general walker, from
    // `d` (the head descriptor as read). Out of line, so the loop over
    // one-descriptor heads keeps its values in registers.
    [[gnu::noinline]] PopStatus walk_head(uint16_t head, VirtqDesc d, std::span<iovec> out,
                                          PoppedChain& chain);

    // Inflight helpers (only while tracking): whether avail position `at`
    // is one the resume list stands in for; the head to hand out for it;
    // marking a newly taken head.
    bool in_resume_window(uint16_t at) const;
    uint16_t resumed_head(uint16_t at, uint16_t head) const;
    void mark_taken(uint16_t at, uint16_t head);
    // Once as many chains were completed as were resumed, no rewind reaches
    // back into the window (the chains after a rewind target are never
    // completed): the window closes before the free-running avail index
    // comes round to its positions again, 65536 pops on.
    void close_resume_window_once_used() {
        if (!resume_.empty() && ++resume_used_ >= resume_.size()) {
            resume_.clear();  // keeps its storage: no free on the hot path
        }
    }

    SplitRing ring_;
    const GuestMemoryMap* memory_ = nullptr;
    size_t region_hint_ = 0;
    bool indirect_allowed_ = false;
    bool event_idx_ = false;
    SplitInflight inflight_;
    std::vector<uint16_t> resume_;  // heads to hand out again, oldest first
    uint16_t resume_start_ = 0;     // avail position of resume_[0]
    uint32_t resume_used_ = 0;      // chains completed since track_inflight, while resuming
};

static_assert(DeviceRing<SplitDeviceRing>);

}  // namespace vnet::virtio
