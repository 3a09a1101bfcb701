// The lifecycle's control methods: reload and upgrade; their wire side.
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_lifecycle_methods(rpc::MethodTable& table, DaemonControl& api);

}  // namespace vnet::control
