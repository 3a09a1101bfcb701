// A port's place on its switch as port.list and port.show answer it: the
// switch, the access (or native) VLAN, the tagged VLANs and the source MACs
// it may send from; nothing for a port on no switch.
#pragma once

#include <nlohmann/json.hpp>

#include "control/config/config.hpp"

namespace vnet::control {

// Sets "switch", "vlan" (null: untagged), "trunk" and "allowed_macs" (empty:
// any) in `out` when `port` is on a switch.
void add_membership_fields(const PortConfig& port, nlohmann::json& out);

}  // namespace vnet::control
