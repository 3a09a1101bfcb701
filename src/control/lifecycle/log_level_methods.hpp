// log.level (vnetctl log level, ovs-appctl vlog/set): every logger's level
// at run time, until a restart or a reload that sets log_level; its wire side.
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_log_level_methods(rpc::MethodTable& table, DaemonControl& api);

}  // namespace vnet::control
