// Waiting for a unix socket a child process creates (vnetd's vhost-user
// sockets, OVS-DPDK's database and ports).
#pragma once

#include <functional>
#include <string>

namespace vnet::bench {

// Is `path` a socket (vnetd renames a listening one into place)?
bool is_socket(const std::string& path);

// Polls until `path` is a socket; throws MeasureError with `failure()`'s
// reason when the process dies first, or "<creator> did not create <path>"
// (plus `detail()`, if given) after `timeout_s`.
void wait_for_socket(const std::string& path, double timeout_s,
                     const std::function<std::string()>& failure, const std::string& creator,
                     const std::function<std::string()>& detail = {});

}  // namespace vnet::bench
