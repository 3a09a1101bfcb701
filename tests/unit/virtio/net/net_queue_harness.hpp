// A virtio-net queue (NetTxQueue or NetRxQueue) over a device ring of either
// model, fed and drained by the model's driver-side mock through
// RingHarness: the tests play the guest.
#pragma once

#include <string>
#include <type_traits>
#include <utility>

#include "packet/queue_counters.hpp"
#include "unit/virtio/ring_harness.hpp"
#include "virtio/net/net_queue_config.hpp"
#include "virtio/ring/any_device_ring.hpp"

namespace vnet::virtio::test {

struct ModelNames {
    template <typename T>
    static std::string GetName(int) {
        return std::is_same_v<T, SplitModel> ? "split" : "packed";
    }
};
using RingModels = ::testing::Types<SplitModel, PackedModel>;

// No MRG_RXBUF, VERSION_1 (12-byte header, num_buffers written), a call fd.
inline NetQueueConfig version_1_config() {
    return NetQueueConfig{12, false, true, true, {}};
}
inline NetQueueConfig mergeable_config() {
    return NetQueueConfig{12, true, true, true, {}};
}
// A legacy device without MRG_RXBUF: a 10-byte header, no num_buffers.
inline NetQueueConfig legacy_config() {
    return NetQueueConfig{10, false, false, true, {}};
}

template <typename Model, typename Queue>
struct NetQueueHarness {
    // The queue takes over the harness's device ring; the driver side stays
    // with the harness.
    template <typename... QueueArgs>
    NetQueueHarness(uint16_t size, bool event_idx, const NetQueueConfig& config, QueueArgs... args)
        : ring(size, event_idx), queue(counters, args...) {
        queue.start(AnyDeviceRing(std::move(ring.device)), config);
    }

    uint64_t drops(packet::DropReason r) const {
        return counters.drops[static_cast<size_t>(r)].get();
    }

    RingHarness<Model> ring;
    packet::QueueCounters counters;
    Queue queue;
};

}  // namespace vnet::virtio::test
