// The ring of a virtio-net queue, in whichever format the front end
// negotiated (VIRTIO_F_RING_PACKED is fixed per connection). The queues hold
// it as a variant and visit it once per burst, so the per-packet RX calls,
// which touch only the RX window, never dispatch on the format; inside a
// visit the burst loop is instantiated for the concrete model.
#pragma once

#include <variant>

#include "virtio/ring/device_ring.hpp"
#include "virtio/ring/packed_ring.hpp"
#include "virtio/ring/split_device_ring.hpp"

namespace vnet::virtio {

static_assert(DeviceRing<SplitDeviceRing> && DeviceRing<PackedRing>);

using AnyDeviceRing = std::variant<SplitDeviceRing, PackedRing>;

inline RingState read_ring_state(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.state(); }, ring);
}
inline uint16_t ring_size(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.size(); }, ring);
}
// For the log line of a port's first ring: which format it runs.
inline const char* describe_format(const AnyDeviceRing& ring) {
    return std::visit([](const auto& r) { return r.kDescription; }, ring);
}

}  // namespace vnet::virtio
