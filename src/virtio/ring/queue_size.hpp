// The largest queue of any ring format: virtio 1.2 §2.7 (split) and §2.8
// (packed) both allow at most 32768 entries.
#pragma once

#include <cstdint>

namespace vnet::virtio {

inline constexpr uint32_t kMaxQueueSize = 32768;

}  // namespace vnet::virtio
