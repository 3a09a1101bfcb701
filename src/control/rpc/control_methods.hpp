// The control socket's methods (what vnetctl, vnetd-cni and any JSON-RPC
// client can ask): each method's name, help and parameter schema, and the
// decoding of its params into a typed call of a ControlApi part. A request
// reaches its part only once it fits the schema; what the part refuses
// comes back as -32000 with its reason. Each part registers its own (ports/port_methods,
// switches/switch_methods, lifecycle/lifecycle_methods); this adds them
// all, with the daemon-wide version and stats.
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_control_methods(rpc::MethodTable& table, const ControlApi& api);

}  // namespace vnet::control
