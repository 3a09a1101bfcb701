// The switches' control methods: switch.add, switch.del, switch.list,
// uplink.peer.add/del and mac.list; their wire side (schemas, params
// decoded into SwitchControl calls).
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_switch_methods(rpc::MethodTable& table, SwitchControl& api);

}  // namespace vnet::control
