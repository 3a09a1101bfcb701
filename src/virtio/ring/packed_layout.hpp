// Packed virtqueue layout in guest memory (virtio 1.2 §2.8) and the position
// arithmetic both sides share. One ring of 16-byte descriptors that the
// driver makes available and the device overwrites with used descriptors,
// plus two 4-byte event suppression areas. These structs describe memory the
// other side writes concurrently: access fields through atomics only.
//
// vhost-user SET_VRING_ADDR names the three areas with the split names:
// desc = descriptor ring, avail = driver area (driver event suppression, we
// read it), used = device area (device event suppression, we write it).
#pragma once

#include <bit>
#include <cstdint>

#include "virtio/ring/queue_size.hpp"

namespace vnet::virtio {

static_assert(std::endian::native == std::endian::little,
              "virtio 1.x rings are little-endian; vnetd runs on little-endian hosts only");

struct PackedDesc {
    static constexpr uint16_t kFlagNext = 1;
    static constexpr uint16_t kFlagWrite = 2;
    static constexpr uint16_t kFlagIndirect = 4;
    static constexpr uint16_t kFlagAvail = 1u << 7;
    static constexpr uint16_t kFlagUsed = 1u << 15;

    uint64_t addr;
    uint32_t len;
    uint16_t id;
    uint16_t flags;
};
static_assert(sizeof(PackedDesc) == 16);

// struct pvirtq_event_suppress (virtio 1.2 §2.8.14).
struct PackedEventSuppress {
    static constexpr uint16_t kEnable = 0;   // RING_EVENT_FLAGS_ENABLE
    static constexpr uint16_t kDisable = 1;  // RING_EVENT_FLAGS_DISABLE
    static constexpr uint16_t kDesc = 2;     // RING_EVENT_FLAGS_DESC (EVENT_IDX only)
    static constexpr uint16_t kFlagsMask = 3;

    uint16_t off_wrap;  // bits 0-14 descriptor offset, bit 15 wrap counter
    uint16_t flags;
};
static_assert(sizeof(PackedEventSuppress) == 4);

// Host pointers to the three areas; whoever builds it has checked that each
// lies wholly inside guest memory with the alignment below.
struct PackedRingLayout {
    PackedDesc* desc = nullptr;
    PackedEventSuppress* driver_event = nullptr;  // driver area: written by the driver
    PackedEventSuppress* device_event = nullptr;  // device area: written by the device
    uint16_t size = 0;                            // 1..32768, any value
};

// virtio 1.2 §2.8.10.1: descriptor ring 16-byte aligned, event areas 4.
inline constexpr uint64_t kPackedDescAlign = 16;
inline constexpr uint64_t kPackedEventAlign = 4;
constexpr uint64_t packed_desc_ring_bytes(uint32_t queue_size) {
    return 16ull * queue_size;
}

// virtio 1.2 §2.8: up to 2^15 entries, and the size need not be a power of 2.
constexpr bool is_valid_packed_queue_size(uint32_t n) {
    return n != 0 && n <= kMaxQueueSize;
}

// A place in the ring: a slot index and the wrap counter that goes with it
// (virtio 1.2 §2.8.1: both counters start at 1 and flip after the last slot).
struct PackedPosition {
    uint16_t index = 0;
    bool wrap = true;

    // The vhost-user / off_wrap encoding: index in bits 0-14, wrap in bit 15.
    constexpr uint16_t encoded() const {
        return static_cast<uint16_t>(index | (wrap ? 0x8000u : 0u));
    }
    static constexpr PackedPosition decode(uint16_t v) {
        return PackedPosition{static_cast<uint16_t>(v & 0x7fffu), (v & 0x8000u) != 0};
    }
    friend constexpr bool operator==(PackedPosition, PackedPosition) = default;
};

// `p` moved forward by n slots, n <= size.
constexpr PackedPosition advance(PackedPosition p, uint32_t n, uint16_t size) {
    uint32_t i = p.index + n;
    if (i >= size) {
        i -= size;
        p.wrap = !p.wrap;
    }
    p.index = static_cast<uint16_t>(i);
    return p;
}

// `p` moved back by n slots, n <= size.
constexpr PackedPosition retreat(PackedPosition p, uint32_t n, uint16_t size) {
    if (n > p.index) {
        p.index = static_cast<uint16_t>(p.index + size - n);
        p.wrap = !p.wrap;
    } else {
        p.index = static_cast<uint16_t>(p.index - n);
    }
    return p;
}

// Slots from `from` forward to `to`, in [0, 2*size): a (index, wrap) pair is
// one point on a cycle of 2*size positions. Defined for any 15-bit index, so a
// hostile off_wrap gives a meaningless but harmless answer.
//
// The ring's own positions (index < size) are both within one lap, and
// their distance needs no division: pop checks it for every chain, and the
// three 32-bit divisions of the general form were ~7 % of a worker's time
// in ringwork's 64 B packed row (docs/BENCHMARKS.md). Only an index the
// driver wrote (an event suppression off_wrap) takes the general form.
constexpr uint32_t slots_between(PackedPosition from, PackedPosition to, uint16_t size) {
    const uint32_t lap = 2u * size;
    const auto linear = [size](PackedPosition p) { return p.index + (p.wrap ? 0u : size); };
    const uint32_t t = linear(to);
    const uint32_t f = linear(from);
    if (t < lap && f < lap) [[likely]] {
        return t >= f ? t - f : t + lap - f;
    }
    return (t % lap + lap - f % lap) % lap;
}

// virtio 1.2 §2.8.1: available = AVAIL matches the wrap counter and USED does not;
// used = both match it.
constexpr bool is_available(uint16_t flags, bool wrap) {
    return ((flags & PackedDesc::kFlagAvail) != 0) == wrap &&
           ((flags & PackedDesc::kFlagUsed) != 0) != wrap;
}
constexpr bool is_used(uint16_t flags, bool wrap) {
    return ((flags & PackedDesc::kFlagAvail) != 0) == wrap &&
           ((flags & PackedDesc::kFlagUsed) != 0) == wrap;
}
constexpr uint16_t avail_flags_for(bool wrap) {
    return wrap ? PackedDesc::kFlagAvail : PackedDesc::kFlagUsed;
}
constexpr uint16_t used_flags_for(bool wrap) {
    return wrap ? static_cast<uint16_t>(PackedDesc::kFlagAvail | PackedDesc::kFlagUsed)
                : uint16_t{0};
}

// virtio 1.2 §2.8.10: the driver (or device) wants an event when the slot at
// `event` is written. `old` is where writing started since the last check and
// `count` how many slots were written; a lap or more is always an event.
constexpr bool packed_event_crossed(PackedPosition event, PackedPosition old, uint32_t count,
                                    uint16_t size) {
    return count >= size || slots_between(old, event, size) < count;
}

}  // namespace vnet::virtio
