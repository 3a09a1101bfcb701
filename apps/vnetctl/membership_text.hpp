// A port's switch membership (port.list's and port.show's "switch", "vlan",
// "trunk", "allowed_macs") as vnetctl's tables and show dump write it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::vnetctl {

// "s0", "s0 vlan 10", "s0 trunk 10,20", "s0 trunk 10,20 native 5"; "-" for
// a port on no switch.
std::string membership_text(const nlohmann::json& port);
// "any", "02:00:00:00:00:01,02:00:00:00:00:02"; "-" for a port on no switch.
std::string allowed_macs_text(const nlohmann::json& port);

}  // namespace vnet::vnetctl
