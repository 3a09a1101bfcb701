// The rtnetlink socket and error of the VXLAN uplink's kernel devices
// (vxlan_link, evpn_bridge, evpn_fdb): one way to open one and to report a
// refused call, for every part that makes or changes them.
#pragma once

#include <string>

#include "common/netlink_handles.hpp"

namespace vnet::ports {

// A connected NETLINK_ROUTE socket; PortSetupError naming `device` if not.
netlink::Sock route_socket(const std::string& device);

// libnl's codes (NLE_*) are not errnos: nl_syserr2nlerr went one way only,
// so the message carries libnl's text ("DEVICE: STEP failed: TEXT").
[[noreturn]] void netlink_failed(const std::string& device, const std::string& step, int nl_err);

}  // namespace vnet::ports
