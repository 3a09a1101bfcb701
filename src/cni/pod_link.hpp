// The pod's side of a tap attachment, over rtnetlink (libnl-route): the tap
// vnetd made on the host is moved into the pod's netns, renamed to
// CNI_IFNAME, brought up and addressed from the IPAM result. vnetd keeps
// its fd across the move: a tap's fd follows the device, not the namespace.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::cni {

// Moves host link `host_name` into the netns at `netns_path` as `ifname`,
// up, with `mtu` if non-zero. Returns its MAC ("aa:bb:..."). Throws
// CniError 5 with the netlink step and its error.
std::string move_link_into_pod(const std::string& host_name, const std::string& netns_path,
                               const std::string& ifname, unsigned mtu);

// Adds the ips[] of `result` that point at interface `iface_index` to the
// pod's `ifname`, then routes[] (via its gw, else the family's gateway).
void address_pod_link(const std::string& netns_path, const std::string& ifname,
                      const nlohmann::json& result, size_t iface_index);

// CHECK: empty when `ifname` exists in the netns, is up and carries every
// address given; else what is wrong.
std::string pod_link_problem(const std::string& netns_path, const std::string& ifname,
                             const nlohmann::json& result, size_t iface_index);

// DEL: deletes the tap named `ifname` in the pod's netns if it is still
// there once vnetd closed its port. The kernel deletes a tap when its last
// fd goes, but vnetd's io_uring drops its file references asynchronously,
// so the link can outlive port.del by a moment, and an ADD of the same
// CNI_IFNAME right after would find the name taken. Only a tun/tap link
// is deleted; a missing netns or link is success.
void remove_pod_tap(const std::string& netns_path, const std::string& ifname);

// True when the path names a network namespace that can be entered.
bool netns_exists(const std::string& netns_path);

}  // namespace vnet::cni
