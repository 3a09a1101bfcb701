// The shared inflight buffer of vhost-user.rst "Inflight I/O tracking"
// (VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD): one region per virtqueue, back to
// back, each rounded up to 64 bytes (QEMU's and DPDK's INFLIGHT_ALIGNMENT).
// The back end allocates it (GET_INFLIGHT_FD), the front end keeps it across
// a back-end crash and hands it to the next back end (SET_INFLIGHT_FD), which
// resubmits what the dead one had taken and not completed.
//
// The layouts are the spec's, byte for byte (the static_asserts pin them):
// QueueRegionSplit for split rings (SplitInflight), QueueRegionPacked for
// packed rings (PackedInflight).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnet::virtio {

inline constexpr uint64_t kInflightAlignment = 64;
inline constexpr uint16_t kInflightVersion = 1;  // 0: an uninitialised buffer

struct DescStateSplit {
    uint8_t inflight;  // head descriptors only: taken, not yet used
    uint8_t padding[5];
    uint16_t next;     // the list of the last batch of used heads
    uint64_t counter;  // the order heads were taken in
};
static_assert(sizeof(DescStateSplit) == 16);
static_assert(offsetof(DescStateSplit, next) == 6);
static_assert(offsetof(DescStateSplit, counter) == 8);

struct QueueRegionSplit {
    uint64_t features;  // 0
    uint16_t version;   // kInflightVersion once initialised
    uint16_t desc_num;  // the queue size
    uint16_t last_batch_head;
    uint16_t used_idx;  // used->idx as of the last completed publish
    // DescStateSplit desc[desc_num] follows (split_inflight_descs).
};
static_assert(sizeof(QueueRegionSplit) == 16);
static_assert(offsetof(QueueRegionSplit, version) == 8);
static_assert(offsetof(QueueRegionSplit, desc_num) == 10);
static_assert(offsetof(QueueRegionSplit, last_batch_head) == 12);
static_assert(offsetof(QueueRegionSplit, used_idx) == 14);

struct DescStatePacked {
    uint8_t inflight;
    uint8_t padding;
    uint16_t next;
    uint16_t last;
    uint16_t num;
    uint64_t counter;
    uint16_t id;
    uint16_t flags;
    uint32_t len;
    uint64_t addr;
};
static_assert(sizeof(DescStatePacked) == 32);
static_assert(offsetof(DescStatePacked, counter) == 8);
static_assert(offsetof(DescStatePacked, addr) == 24);

// The packed region's desc[] is not indexed by ring slot: it is a pool of
// desc_num entries linked into a free list (next), from which each taken
// chain gets one entry per descriptor, holding a copy of it (id, flags, len,
// addr). The chain's first entry is its head (inflight, counter, num, last).
struct QueueRegionPacked {
    uint64_t features;  // 0
    uint16_t version;   // kInflightVersion once initialised
    uint16_t desc_num;  // the queue size
    uint16_t free_head;
    uint16_t old_free_head;
    uint16_t used_idx;
    uint16_t old_used_idx;
    uint8_t used_wrap_counter;
    uint8_t old_used_wrap_counter;
    uint8_t padding[7];
    // DescStatePacked desc[desc_num] follows, 8-aligned (packed_inflight_descs).
};
// The spec's header: u64 features, six u16, two u8 wrap counters, 7 bytes of
// padding = 29 bytes; desc[] starts at the next multiple of 8.
inline constexpr uint64_t kQueueRegionPackedHeaderBytes = 8 + 6 * 2 + 2 + 7;
static_assert(offsetof(QueueRegionPacked, free_head) == 12);
static_assert(offsetof(QueueRegionPacked, used_idx) == 16);
static_assert(offsetof(QueueRegionPacked, old_used_idx) == 18);
static_assert(offsetof(QueueRegionPacked, used_wrap_counter) == 20);
static_assert(offsetof(QueueRegionPacked, old_used_wrap_counter) == 21);
static_assert(offsetof(QueueRegionPacked, padding) + 7 == kQueueRegionPackedHeaderBytes);
static_assert(sizeof(QueueRegionPacked) == 32);  // = the header rounded up to desc[]'s alignment

inline DescStateSplit* split_inflight_descs(QueueRegionSplit* region) {
    return reinterpret_cast<DescStateSplit*>(region + 1);
}
inline DescStatePacked* packed_inflight_descs(QueueRegionPacked* region) {
    return reinterpret_cast<DescStatePacked*>(region + 1);
}

constexpr uint64_t align_inflight(uint64_t bytes) {
    return (bytes + kInflightAlignment - 1) & ~(kInflightAlignment - 1);
}
// One queue's region in the buffer (QEMU vu_inflight_queue_size, DPDK
// get_pervq_shm_size_split/packed).
constexpr uint64_t split_inflight_queue_bytes(uint16_t queue_size) {
    return align_inflight(sizeof(QueueRegionSplit) + sizeof(DescStateSplit) * uint64_t{queue_size});
}
constexpr uint64_t packed_inflight_queue_bytes(uint16_t queue_size) {
    return align_inflight(kQueueRegionPackedHeaderBytes +
                          sizeof(DescStatePacked) * uint64_t{queue_size});
}
static_assert(split_inflight_queue_bytes(256) == 4160);
static_assert(packed_inflight_queue_bytes(256) == 8256);

// A fresh split region for a queue of `queue_size` (GET_INFLIGHT_FD): every
// head not in flight, version 1. `region` points at split_inflight_queue_bytes
// zeroed bytes.
void init_split_inflight_region(QueueRegionSplit* region, uint16_t queue_size);
// A fresh packed region (GET_INFLIGHT_FD, as DPDK makes it): every entry on
// the free list in order (desc[i].next = i + 1, desc_num ends it), nothing in
// flight, both used positions at slot 0 with wrap counter 1 (a new ring's).
void init_packed_inflight_region(QueueRegionPacked* region, uint16_t queue_size);

}  // namespace vnet::virtio
