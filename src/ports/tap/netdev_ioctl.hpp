// Link settings of a network device by name, through the classic SIOC* ioctls
// on an AF_INET datagram socket (netdevice(7)). They act in the caller's
// network namespace: once a tap's link is moved to another namespace (its fd
// keeps working), these fail with ENODEV here.
//
// Cold path only: each call opens and closes its own socket. Failures throw
// PortSetupError naming `label` (e.g. "tap 'vt1'").
#pragma once

#include <string>
#include <string_view>

namespace vnet::ports::netdev {

unsigned ifindex(std::string_view label, const std::string& name);  // SIOCGIFINDEX
unsigned mtu(std::string_view label, const std::string& name);      // SIOCGIFMTU
void set_mtu(std::string_view label, const std::string& name, unsigned mtu);
unsigned txqueuelen(std::string_view label, const std::string& name);  // SIOCGIFTXQLEN
void set_txqueuelen(std::string_view label, const std::string& name, unsigned len);
bool link_up(std::string_view label, const std::string& name);  // IFF_UP in SIOCGIFFLAGS
void set_link_up(std::string_view label, const std::string& name, bool up);

}  // namespace vnet::ports::netdev
