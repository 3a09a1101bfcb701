// RingState: one ring as `vnetctl show` reports it, VPP `show vhost-user`
// style: the device's cursors as the owning worker keeps them, and the
// guest's side of the ring as it reads in guest memory now. Each ring model
// fills it (DeviceRing::state()).
//
// Read on the ring's owner only (between rounds): the cursors are plain
// worker state. The guest fields are read through the layout the device
// validated when the ring started (each area wholly inside one region,
// aligned; the event words are part of those areas), with the same
// single-copy atomic loads as the datapath; the caller guards the read
// against SIGBUS like a turn (the front end may have shrunk its memory).
#pragma once

#include <cstdint>
#include <optional>

namespace vnet::virtio {

struct RingState {
    bool packed = false;
    uint16_t size = 0;
    // Split: the free-running 16-bit indexes (the next avail entry the
    // device takes; where its next used entry goes, staged ones included).
    // Packed: slot index | wrap counter << 15 (vhost-user's encoding).
    uint16_t last_avail_idx = 0;
    uint16_t last_used_idx = 0;
    // Split, from guest memory: avail->flags/idx (the driver's), used->flags/idx
    // (ours, as the guest sees them), and with EVENT_IDX used_event (the
    // driver's) and avail_event (ours).
    uint16_t avail_flags = 0;
    uint16_t avail_idx = 0;
    uint16_t used_flags = 0;
    uint16_t used_idx = 0;
    std::optional<uint16_t> used_event;
    std::optional<uint16_t> avail_event;
    // Packed, from guest memory: both event suppression areas, and whether
    // the descriptor at last_avail_idx is available (work waiting).
    uint16_t driver_event_flags = 0;
    uint16_t driver_event_off_wrap = 0;
    uint16_t device_event_flags = 0;
    uint16_t device_event_off_wrap = 0;
    bool next_available = false;
};

}  // namespace vnet::virtio
