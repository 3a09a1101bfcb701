// Split virtqueue layout in guest memory (virtio 1.2 §2.7). These structs
// describe memory the guest writes concurrently: read fields through
// read_once()/atomic_ref, never through a plain struct copy that the compiler
// may re-load (the double-fetch bug class).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "virtio/ring/queue_size.hpp"

namespace vnet::virtio {

static_assert(std::endian::native == std::endian::little,
              "virtio 1.x rings are little-endian; vnetd runs on little-endian hosts only");

struct VirtqDesc {
    static constexpr uint16_t kFlagNext = 1;
    static constexpr uint16_t kFlagWrite = 2;
    static constexpr uint16_t kFlagIndirect = 4;

    uint64_t addr;
    uint32_t len;
    uint16_t flags;
    uint16_t next;
};
static_assert(sizeof(VirtqDesc) == 16);

// The avail and used rings end in flexible array members, exactly as the
// virtio spec lays them out; -Wpedantic calls that an extension, so it is
// silenced for these two declarations only.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#pragma clang diagnostic ignored "-Wflexible-array-extensions"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

struct VirtqAvail {
    static constexpr uint16_t kFlagNoInterrupt = 1;
    uint16_t flags;
    uint16_t idx;
    uint16_t ring[];  // [queue_size], then uint16_t used_event (EVENT_IDX)
};

struct VirtqUsedElem {
    uint32_t id;
    uint32_t len;
};
static_assert(sizeof(VirtqUsedElem) == 8);

struct VirtqUsed {
    static constexpr uint16_t kFlagNoNotify = 1;
    uint16_t flags;
    uint16_t idx;
    VirtqUsedElem ring[];  // [queue_size], then uint16_t avail_event (EVENT_IDX)
};

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

// Sizes of the three areas (virtio 1.2 §2.7 table "Virtqueue Part Alignment").
constexpr uint64_t desc_table_bytes(uint32_t queue_size) {
    return 16ull * queue_size;
}
constexpr uint64_t avail_ring_bytes(uint32_t queue_size) {
    return 6ull + 2ull * queue_size;
}
constexpr uint64_t used_ring_bytes(uint32_t queue_size) {
    return 6ull + 8ull * queue_size;
}

inline constexpr uint64_t kDescTableAlign = 16;
inline constexpr uint64_t kAvailRingAlign = 2;
inline constexpr uint64_t kUsedRingAlign = 4;

// virtio 1.2 §2.7: split queue sizes are powers of 2.
constexpr bool is_valid_split_queue_size(uint32_t n) {
    return n != 0 && n <= kMaxQueueSize && std::has_single_bit(n);
}

// virtio 1.2 §2.7.10: the wrap-safe "has the event index been crossed" test,
// used both for our calls (used_event) and by the driver for kicks (avail_event).
constexpr bool vring_need_event(uint16_t event_idx, uint16_t new_idx, uint16_t old_idx) {
    return static_cast<uint16_t>(new_idx - event_idx - 1) <
           static_cast<uint16_t>(new_idx - old_idx);
}

}  // namespace vnet::virtio
