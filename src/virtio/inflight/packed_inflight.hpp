// PackedInflight: one packed queue's side of the inflight buffer
// (vhost-user.rst "Inflight I/O tracking", packed virtqueue). The ring tells
// it what it does, and it stores to the region in the spec's order, so that
// a crash between any two stores leaves a state the next back end recovers
// exactly:
//   take(chain)        a chain left the ring: per descriptor, the head entry
//                      (num = 0, counter, inflight = 1), last, num, the copy
//                      at free_head, free_head = next; then old_free_head
//   give_back(slots)   the newest chains return to the ring unused (RX
//                      rewind): their entries go back on the free list
//                      (free_head, then old_free_head), then inflight = 0
//   add_used(id)       a used descriptor was staged for chain `id`
//   prepare_publish(p) before the ring stores the burst head's flags: each
//                      staged chain onto the free list (desc[last].next,
//                      free_head), then used_idx/used_wrap_counter = p
//   published()        after that store: inflight = 0 for each staged head,
//                      then old_free_head, then old_used_idx and
//                      old_used_wrap_counter
// On start, recover() applies the spec's reconnect procedure (commit or roll
// back an unfinished publish, clear the free list, resubmit by counter) and
// lists the chains still in flight, oldest first, with a private copy of
// their descriptors: the ring hands those out again before anything new.
//
// Departures from the letter of the spec, each for a reason:
//  - The free-list pushes of add_used wait for prepare_publish. The spec
//    takes at old_free_head and assumes free_head == old_free_head then;
//    our RX path pops between add_used and publish.
//  - used_idx, old_used_idx and both wrap counters are one aligned 64-bit
//    word and each update of them is one store: a crash between the index
//    and its wrap counter would otherwise recover a position a lap off.
//  - "used_idx does not match old_used_idx" compares the wrap counters too
//    (a burst of exactly a ring's slots leaves the index where it was).
//  - recover() also marks not-used every slot of [used, used + in flight)
//    that shows a used descriptor: the dead back end wrote the non-head
//    descriptors of an unpublished burst before its head, and the driver
//    would take them once the head before them is published again.
//
// Only we write the region while the ring runs, but the front end maps it:
// every index we follow comes from our private copy of the links, never from
// the region, so a scribbling front end spoils only its own recovery, which
// recover() checks completely. Inactive (no region) unless the front end
// gave one. Never allocates, locks or logs after recover() (cold, at start).
#pragma once

#include <cstdint>
#include <vector>

#include "virtio/inflight/inflight_layout.hpp"
#include "virtio/inflight/split_inflight.hpp"
#include "virtio/ring/packed_layout.hpp"

namespace vnet::virtio {

// What recover() hands the ring: the used position, and the chains to
// resubmit in counter order, which take the `slots` ring positions from
// `used` on (where the dead back end had taken them, in some order).
struct PackedResume {
    struct Desc {
        uint64_t addr = 0;
        uint32_t len = 0;
        uint16_t flags = 0;
    };
    struct Chain {
        uint16_t id = 0;      // buffer id, < queue size, unique among the chains
        uint16_t num = 0;     // descriptors (= ring slots), >= 1
        uint32_t first = 0;   // index of its first descriptor in `descs`
        uint32_t offset = 0;  // ring slots from `used` to where it is handed out
    };
    PackedPosition used{};
    uint32_t slots = 0;      // sum of num
    bool from_base = false;  // a fresh region: the vring base's positions stand
    std::vector<Chain> chains;
    std::vector<Desc> descs;
};

class PackedInflight {
public:
    static constexpr uint16_t kNone = 0xffff;  // no entry (queue sizes are <= 32768)

    PackedInflight() = default;
    // `region` holds packed_inflight_queue_bytes(size) bytes, 8-aligned, and
    // stays mapped while the queue runs (the port holds the mapping).
    PackedInflight(QueueRegionPacked* region, uint16_t size);

    bool active() const { return region_ != nullptr; }

    // The reconnect procedure, before the ring runs. `ring` is the ring's
    // descriptor area (read at old_used_idx; slots of the resubmitted range
    // may be rewritten, see above). A region never used (version 0) or
    // `fresh` (just made by GET_INFLIGHT_FD, positions unknown to it) is
    // initialised with its used position at `base_used`, from the vring base.
    InflightError recover(PackedDesc* ring, PackedPosition base_used, bool fresh,
                          PackedResume* resume);

    enum class TakeResult : uint8_t { ok, id_in_flight, no_free_entry };
    // The chain of `slots` descriptors from ring position `head`, buffer
    // `id` < size, popped and checked by the ring (which read them already;
    // copies are read again and checked again at recovery).
    TakeResult take(const PackedDesc* ring, PackedPosition head, uint16_t slots, uint16_t id);
    // The newest chains, `slots` ring slots together, are given back unused.
    void give_back(uint32_t slots);
    void add_used(uint16_t id) {
        if (id >= size_ || id_entry_[id] == kNone || staged_count_ == size_) [[unlikely]] {
            return;  // not a chain we hold (a hostile id): nothing to record
        }
        staged_[staged_count_++] = id_entry_[id];
        id_entry_[id] = kNone;
    }
    // `used` is the ring's used position after the staged burst.
    void prepare_publish(PackedPosition used);
    void published();

    uint64_t counter() const { return counter_; }
    uint16_t free_entries() const { return free_count_; }

private:
    void store_used_word(PackedPosition now, PackedPosition old);
    void push_free(uint16_t entry);

    QueueRegionPacked* region_ = nullptr;
    DescStatePacked* desc_ = nullptr;
    uint16_t size_ = 0;
    // Private books, the truth while we run (the region mirrors them).
    std::vector<uint16_t> next_;      // per entry: the free-list / chain link
    std::vector<uint16_t> num_;       // per head entry: descriptors of its chain
    std::vector<uint16_t> last_;      // per head entry: its chain's last entry
    std::vector<uint16_t> id_of_;     // per head entry: the chain's buffer id
    std::vector<uint16_t> id_entry_;  // per buffer id: head entry of the chain in flight
    std::vector<uint16_t> staged_;    // head entries of the burst since the last publish
    uint16_t staged_count_ = 0;
    std::vector<uint16_t> taken_;  // head entries in take order, a ring of `size_`
    uint16_t taken_end_ = 0;       // where the next take goes
    uint16_t taken_count_ = 0;     // valid entries before taken_end_
    uint16_t free_head_ = 0;
    uint16_t free_count_ = 0;
    PackedPosition used_{};  // used position as of the last publish
    uint64_t counter_ = 0;
};

}  // namespace vnet::virtio
