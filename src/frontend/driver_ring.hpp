// The one shape of a driver-side ring (the guest half of a virtqueue), shared
// by DriverSplitRing (virtio 1.2 §2.7) and DriverPackedRing (§2.8), so that
// vnet-pktgen, the unit tests, the fuzzers and the benchmarks drive either
// format through the same calls:
//
//   add_buffer / add_chain   queue a chain (invisible to the device)
//   publish                  make everything queued visible at once
//   kick_needed              once per batch: does the device want a kick
//   used_pending / reclaim   take back what the device returned
//   disable/enable_interrupts[_after]   call suppression
//   vring_base               where the ring is, as SET_VRING_BASE carries it
//
// Each ring is one-owner; the device is the only other party.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>

namespace vnet::frontend {

enum class BufferAccess : uint8_t {
    device_reads,   // TX: header + frame for the device to take
    device_writes,  // RX: room for the device to fill
};

struct BufferSegment {
    uint64_t addr = 0;  // guest-physical
    uint32_t len = 0;
    BufferAccess access = BufferAccess::device_reads;
};

// One chain the device has finished with.
struct Completion {
    uint32_t cookie = 0;  // what the caller passed to add_*
    uint32_t len = 0;     // bytes the device wrote (RX); 0 or anything for TX
};

enum class UsedRingError : uint8_t {
    ok,
    used_index_jump,   // used->idx moved past what we have in flight (split)
    id_out_of_range,   // used element id >= queue size
    id_not_in_flight,  // used element names a head we did not hand out
};
const char* to_string(UsedRingError e);

template <typename R>
concept DriverRing = requires(R r, const R cr, uint64_t addr, uint32_t len, BufferAccess access,
                              uint32_t cookie, std::span<const BufferSegment> segments,
                              std::span<Completion> out, UsedRingError* error, uint16_t count) {
    { cr.size() } -> std::same_as<uint16_t>;
    { cr.event_idx() } -> std::same_as<bool>;
    { cr.free_descriptors() } -> std::same_as<uint16_t>;
    { cr.chains_in_flight() } -> std::same_as<uint16_t>;
    { cr.vring_base() } -> std::same_as<uint32_t>;
    { r.add_buffer(addr, len, access, cookie) } -> std::same_as<bool>;
    { r.add_chain(segments, cookie) } -> std::same_as<bool>;
    { r.publish() } -> std::same_as<void>;
    { r.kick_needed() } -> std::same_as<bool>;
    { cr.used_pending() } -> std::same_as<uint16_t>;
    { r.reclaim(out, error) } -> std::same_as<uint16_t>;
    { r.disable_interrupts() } -> std::same_as<void>;
    { r.enable_interrupts() } -> std::same_as<bool>;
    { r.enable_interrupts_after(count) } -> std::same_as<bool>;
};

}  // namespace vnet::frontend
