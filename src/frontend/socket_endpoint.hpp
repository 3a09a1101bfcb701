// Getting a connected vhost-user socket, in either role: as a client that
// connects to a back end's listening socket (QEMU's default, DPDK
// net_vhost client=0), or as a server that listens and accepts one back
// end (DPDK net_vhost client=1, vnetd in client mode).
#pragma once

#include <chrono>
#include <string>

#include "common/unique_fd.hpp"

namespace vnet::frontend {

// Connects to `path`, retrying while the back end is not listening yet
// (ENOENT / ECONNREFUSED) until `timeout`. Throws std::system_error.
UniqueFd connect_unix_socket(const std::string& path, std::chrono::milliseconds timeout);

// Listens on `path` (replacing a stale socket file there) and accepts one
// connection within `timeout`. The listening socket is closed and the path
// removed once a peer is connected. Throws std::system_error.
UniqueFd accept_unix_socket(const std::string& path, std::chrono::milliseconds timeout);

}  // namespace vnet::frontend
