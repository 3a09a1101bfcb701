// mac.flush (vnetctl mac flush, ovs-appctl fdb/flush): forgets learned MACs
// so that the next frame to each floods and is learned again; its wire side.
#pragma once

#include "control/rpc/control_api.hpp"
#include "control/rpc/method_table.hpp"

namespace vnet::control {

void add_mac_flush_methods(rpc::MethodTable& table, DaemonControl& api);

}  // namespace vnet::control
