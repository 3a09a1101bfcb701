#include "control/rpc/control_methods.hpp"

#include "control/lifecycle/lifecycle_methods.hpp"
#include "control/ports/port_methods.hpp"
#include "control/rpc/method_helpers.hpp"
#include "control/switches/switch_methods.hpp"

namespace vnet::control {

using nlohmann::json;

void add_control_methods(rpc::MethodTable& table, ControlApi& api) {
    table.add("version", "vnetd's version", kNoParams, [](const json&) {
        return json{{"version", VNET_VERSION}};
    });
    table.add("stats", "every port's counters by queue and direction, as the stats file has them",
              kNoParams, [&api](const json&) { return api.stats(); });
    add_port_methods(table, api);
    add_lifecycle_methods(table, api);
    add_switch_methods(table, api);
}

}  // namespace vnet::control
