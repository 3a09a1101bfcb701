#include "virtio/net/ring_state.hpp"

#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {

namespace {

using shared::load_acquire;
using shared::load_relaxed;

RingState state_of(const SplitDeviceRing& device_ring) {
    const SplitRing& ring = device_ring.split();
    const SplitRingLayout& l = ring.layout();
    RingState s;
    s.size = ring.size();
    s.last_avail_idx = ring.last_avail_idx();
    s.last_used_idx = ring.used_idx();
    if (l.avail == nullptr || l.used == nullptr || l.size == 0) {
        return s;  // a ring that never started
    }
    // acquire: as the datapath reads avail->idx before the entries it covers.
    s.avail_idx = load_acquire(l.avail->idx);
    s.avail_flags = load_relaxed(l.avail->flags);
    s.used_idx = load_relaxed(l.used->idx);
    s.used_flags = load_relaxed(l.used->flags);
    if (ring.event_idx()) {
        // virtio 1.2 §2.7.10: used_event follows avail->ring[size] and
        // avail_event follows used->ring[size], inside the validated areas.
        s.used_event = load_relaxed(l.avail->ring[l.size]);
        const auto* avail_event =
            static_cast<const uint16_t*>(static_cast<const void*>(&l.used->ring[l.size]));
        s.avail_event = load_relaxed(*avail_event);
    }
    return s;
}

RingState state_of(const PackedRing& ring) {
    const PackedRingLayout& l = ring.layout();
    RingState s;
    s.packed = true;
    s.size = ring.size();
    s.last_avail_idx = ring.avail_position().encoded();
    s.last_used_idx = ring.published_used_position().encoded();
    if (l.desc == nullptr || l.driver_event == nullptr || l.device_event == nullptr ||
        l.size == 0) {
        return s;
    }
    s.driver_event_flags = load_relaxed(l.driver_event->flags);
    s.driver_event_off_wrap = load_relaxed(l.driver_event->off_wrap);
    s.device_event_flags = load_relaxed(l.device_event->flags);
    s.device_event_off_wrap = load_relaxed(l.device_event->off_wrap);
    s.next_available = ring.next_available();
    return s;
}

}  // namespace

RingState read_ring_state(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return state_of(r); }, ring);
}

}  // namespace vnet::virtio
