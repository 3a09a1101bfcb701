// SplitInflight: one split queue's side of the inflight buffer
// (vhost-user.rst "Inflight I/O tracking"). The ring tells it what it does,
// in the spec's order, so that a crash between any two stores leaves a state
// the next back end recovers exactly:
//   take(head)          a head left the avail ring: counter, then inflight = 1
//   give_back(head)     a taken head returns to the avail ring unused (RX
//                       rewind): inflight = 0
//   add_used(head)      a used entry was staged: desc[head].next =
//                       last_batch_head, last_batch_head = head
//   published(used_idx) after used->idx was stored: inflight = 0 for each
//                       head of the batch, then used_idx = used->idx
// On start, recover() applies the spec's reconnect procedure and lists the
// heads still in flight, oldest (lowest counter) first: the ring hands those
// out again before anything new.
//
// Inactive (no region) unless the front end gave one; the ring asks
// active() once per chain or publish. Never allocates, locks or logs on
// that path; only recover() (cold, at ring start) allocates.
//
// Stores to the region are atomic (the front end maps it too, and reads it
// once we are dead) and in program order: a SIGKILL cannot reorder what the
// CPU has executed, and release ordering keeps the compiler from doing so.
#pragma once

#include <cstdint>
#include <vector>

#include "virtio/inflight/inflight_layout.hpp"
#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {

enum class InflightError : uint8_t {
    ok,
    version_unknown,     // version is neither 0 (fresh) nor 1
    size_mismatch,       // desc_num is not the queue size
    batch_too_long,      // used->idx - used_idx exceeds the queue size
    batch_list_invalid,  // the last-batch list leaves the table
    // Packed regions (PackedInflight):
    free_head_out_of_range,   // free_head or old_free_head beyond desc_num
    used_index_out_of_range,  // used_idx / old_used_idx >= desc_num, or a wrap counter not 0/1
    free_list_invalid,        // a free-list next leaves the table, or the list loops
    chain_invalid,            // an in-flight chain's num, next or last leaves it or disagrees
    chains_overlap,           // an entry in two chains, or in a chain and on the free list
    id_invalid,               // an in-flight chain's buffer id >= desc_num, or in two chains
    entries_lost,             // entries neither free nor in flight
};
const char* to_string(InflightError e);

class SplitInflight {
public:
    SplitInflight() = default;
    // `region` holds split_inflight_queue_bytes(size) bytes, 8-aligned, and
    // stays mapped while the queue runs (the port holds the mapping).
    SplitInflight(QueueRegionSplit* region, uint16_t size)
        : region_(region), desc_(split_inflight_descs(region)), size_(size) {}

    bool active() const { return region_ != nullptr; }

    // The reconnect procedure, before the ring runs: fixes a publish the
    // last back end did not finish (used->idx is `ring_used_idx`), then
    // lists the heads still in flight by counter. Later takes count on from
    // the highest counter. A region never used (version 0) is initialised.
    InflightError recover(uint16_t ring_used_idx, std::vector<uint16_t>* resume);

    // `head` < size (the ring checked it).
    void take(uint16_t head) {
        shared::store_relaxed(desc_[head].counter, ++counter_);
        shared::store_release(desc_[head].inflight, uint8_t{1});
    }
    void give_back(uint16_t head) { shared::store_release(desc_[head].inflight, uint8_t{0}); }
    void add_used(uint16_t head) {
        shared::store_relaxed(desc_[head].next, last_batch_head_);
        last_batch_head_ = head;
        shared::store_release(region_->last_batch_head, head);
        ++batch_;
    }
    // After the ring stored used->idx = `used_idx` (release).
    void published(uint16_t used_idx);

    uint64_t counter() const { return counter_; }

private:
    QueueRegionSplit* region_ = nullptr;
    DescStateSplit* desc_ = nullptr;
    uint16_t size_ = 0;
    uint16_t last_batch_head_ = 0;
    uint16_t batch_ = 0;  // used entries staged since the last publish
    uint64_t counter_ = 0;
};

}  // namespace vnet::virtio
