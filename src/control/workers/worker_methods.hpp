// worker.list (vnetctl worker list): what each worker thread runs and how
// busy it is; its wire side.
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_worker_methods(rpc::MethodTable& table, DaemonControl& api);

}  // namespace vnet::control
