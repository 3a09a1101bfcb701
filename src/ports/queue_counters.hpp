// The ports' names for the per-queue counters, which live in src/packet/ so
// that the virtio-net queues (src/virtio/net/, which may not depend on
// ports) count with the same type.
#pragma once

#include "packet/queue_counters.hpp"

namespace vnet::ports {

using packet::Counter;
using packet::DropReason;
using packet::kBurstHistogramBuckets;
using packet::kDropReasonCount;
using packet::QueueCounters;
using packet::to_string;

}  // namespace vnet::ports
