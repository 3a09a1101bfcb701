// A vring base (GET_VRING_BASE's value) as a log line should say it: the
// positions the ring model reads in it, each with its wrap counter if the
// format has one. A packed base read as one number (2147516416) says nothing
// to whoever reads the log.
#pragma once

#include <cstdint>
#include <string>

#include "virtio/ring/any_device_ring.hpp"

namespace vnet::vhost_user {

// "avail index 7" (split), "avail index 0 wrap 1, used index 0 wrap 1" (packed).
std::string describe_vring_base(const virtio::RingModel& model, uint32_t base);

}  // namespace vnet::vhost_user
