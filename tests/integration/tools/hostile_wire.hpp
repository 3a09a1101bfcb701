// Socket-level helpers for vnet-hostile: connecting (and telling "admitted"
// from "accepted and closed at once"), sending requests with any flags and
// any number of fds, reading acknowledgements, and watching for the back end
// to drop the connection. Plus a look at the back end's fd table, so an
// attack can check for leaks while its connection is still open.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "common/unique_fd.hpp"
#include "vhost_user/message.hpp"

namespace vnet::hostile {

// The back end did something a front end must never see: accepted what it
// must refuse, answered wrongly, leaked. vnet-hostile exits 1.
class BackendMisbehaved : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// One line of what the tool did or saw, prefixed "vnet-hostile: ".
void say(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Connects and makes sure the back end really took us: a server that is full
// accepts and closes at once, which looks like a successful connect, so one
// GET_FEATURES must be answered first. Retries (refused, full, not listening
// yet) until `timeout`; throws std::runtime_error.
UniqueFd connect_admitted(const std::string& path, std::chrono::milliseconds timeout);

// One connect attempt. Returns an invalid fd with *err set on failure.
UniqueFd connect_once(const std::string& path, bool nonblocking, int* err);

// Writes all of `data` (MSG_NOSIGNAL). False with errno on failure.
bool send_bytes(int fd, const void* data, size_t len);

// Sends one request: flags are version 1, plus NEED_REPLY when asked.
bool send_request(int fd, vhost_user::Request request, bool need_reply, const void* payload,
                  uint32_t size, std::span<const int> fds = {});

// Like send_request, with raw flags and any number of fds (the kernel allows
// up to 253 per message; the protocol 8).
bool send_request_raw(int fd, uint32_t request, uint32_t flags, const void* payload, uint32_t size,
                      std::span<const int> fds);

// Reads the REPLY_ACK for `request` and returns its status (0 = done).
// Throws BackendMisbehaved if none arrives, or it is malformed.
uint64_t read_ack(int fd, vhost_user::Request request, std::chrono::milliseconds timeout);

// Sends `request` with NEED_REPLY and requires a refusal (non-zero status).
void require_refused(int fd, vhost_user::Request request, const void* payload, uint32_t size,
                     std::span<const int> fds, const char* what);

// Waits up to `timeout` for the back end to close; whatever it sends meanwhile
// is read and discarded. True once closed (EOF or reset).
bool wait_for_close(int fd, std::chrono::milliseconds timeout);

// The back end must drop the connection after `after` (a description of the
// last message). If it does not within `timeout`, that is reported, and one
// harmless probe (GET_FEATURES) must then be answered with the drop: a broken
// device may keep its socket until it hears from the front end again, but it
// must never answer. Throws BackendMisbehaved otherwise.
void require_drop(int fd, const char* after, std::chrono::milliseconds timeout);

// Entries in /proc/<pid>/fd, and MAP_SHARED mappings in /proc/<pid>/maps
// (guest memory, memfds; not the allocator's own), or -1 if unreadable. Each
// the least of a few samples over 100 ms (transient opens do not count).
long count_fds(int pid);
long count_shared_maps(int pid);

}  // namespace vnet::hostile
