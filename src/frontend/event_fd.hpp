// The two eventfds of a virtqueue as the driver sees them: the kick fd we
// write to notify the device, the call fd the device writes to interrupt us.
#pragma once

#include <cstdint>

#include "common/unique_fd.hpp"

namespace vnet::frontend {

// A non-blocking eventfd; throws std::system_error.
UniqueFd make_event_fd();

// Adds 1 to the counter. Returns false only on an unexpected error.
bool signal_event_fd(int fd);

// Reads and clears the counter; returns 0 if it was not signalled.
uint64_t drain_event_fd(int fd);

// Waits until the fd is readable or `timeout_ms` passes. Returns true if
// readable, false on timeout or EINTR (a signal: the caller re-checks).
bool wait_event_fd(int fd, int timeout_ms);

}  // namespace vnet::frontend
