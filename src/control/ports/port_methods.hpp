// The ports' control methods: port.list, port.show, port.add, port.del,
// port.set; their wire side (schemas, params decoded into PortControl calls).
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_port_methods(rpc::MethodTable& table, PortControl& api);

}  // namespace vnet::control
