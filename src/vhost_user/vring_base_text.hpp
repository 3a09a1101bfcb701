// A vring base (GET_VRING_BASE's value) as a log line should say it. Split:
// the next avail index. Packed: vhost-user packs two positions with their
// wrap counters into 32 bits (bits 0-14 avail index, 15 its wrap counter,
// 16-30 used index, 31 its wrap counter), which read as one number
// (2147516416) say nothing to whoever reads the log.
#pragma once

#include <cstdint>
#include <string>

#include "vhost_user/queue_observer.hpp"

namespace vnet::vhost_user {

// "avail index 7" (split), "avail index 0 wrap 1, used index 0 wrap 1" (packed).
std::string describe_vring_base(RingFormat format, uint32_t base);

}  // namespace vnet::vhost_user
