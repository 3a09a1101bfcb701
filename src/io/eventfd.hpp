// eventfd helpers. Fds that a front end hands us as kick/call/err must be
// eventfds: anything else (a pipe, a socket, a file) could block the
// datapath or do something else entirely on write (hostile-input rule 5).
#pragma once

#include <cstdint>

#include "common/unique_fd.hpp"

namespace vnet::io {

// True if `fd` is an open eventfd: fstat succeeds and the kernel's
// /proc/self/fdinfo entry has an "eventfd-count:" line.
bool is_eventfd(int fd);

// Sets O_NONBLOCK on the open file description. Returns false on error.
bool set_nonblocking(int fd);

// A new non-blocking, close-on-exec eventfd; throws std::system_error.
UniqueFd make_eventfd();

// Adds 1 to the counter. Never blocks on a non-blocking eventfd; a full
// counter (EAGAIN) already means "signalled", so it counts as success.
bool signal_eventfd(int fd);

// Reads and clears the counter; returns 0 if it was not signalled.
uint64_t drain_eventfd(int fd);

// Waits until the fd is readable or `timeout_ms` passes (the driver side's
// sleep on a call fd). Returns true if readable, false on timeout or EINTR
// (a signal: the caller re-checks).
bool wait_eventfd(int fd, int timeout_ms);

}  // namespace vnet::io
