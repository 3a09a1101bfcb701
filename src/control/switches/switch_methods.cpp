#include "control/switches/switch_methods.hpp"

#include "control/rpc/method_helpers.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;
using rpc::ParamSchema;
using rpc::ParamType;

const ParamSchema kOptionalSwitch({{"switch", ParamType::string}});

}  // namespace

void add_switch_methods(rpc::MethodTable& table, SwitchControl& api) {
    using rpc::optional_string_param;
    using rpc::string_param;

    table.add(
        "switch.add",
        "add a switch: {name, KEY: VALUE...} with the [[switch]] keys of the config file "
        "(mac_aging_s, mac_table_size, destination_hold_us)",
        ParamSchema({{"name", ParamType::string, true}}, &option_param_type<OptionScope::switch_>,
                    "name and the [[switch]] keys of the config file"),
        [&api](const json& params) {
            const std::string name = string_param(params, "name");
            const Settings settings = settings_of(params, {"name"});
            return refusing([&] {
                api.add_switch(name, settings);
                return done();
            });
        });
    table.add("switch.del", "remove a switch that has no ports: {name}", kRequiredName,
              [&api](const json& params) {
                  const std::string name = string_param(params, "name");
                  return refusing([&] {
                      api.remove_switch(name);
                      return done();
                  });
              });
    // A switch's VXLAN uplink is a port (port.add type vxlan, port.del);
    // its peers change here, the kernel's FDB and the config together.
    const ParamSchema peer_schema(
        {{"switch", ParamType::string, true}, {"address", ParamType::string, true}});
    for (const bool add : {true, false}) {
        table.add(add ? "uplink.peer.add" : "uplink.peer.del",
                  add ? "add a remote VTEP to a switch's vxlan uplink: {switch, address}"
                      : "remove a remote VTEP from a switch's vxlan uplink: {switch, address}",
                  peer_schema, [&api, add](const json& params) {
                      const std::string sw = string_param(params, "switch");
                      const std::string address = string_param(params, "address");
                      return refusing([&] {
                          api.change_uplink_peer(sw, address, add);
                          return done();
                      });
                  });
    }
    table.add("switch.list",
              "the switches: MAC table size and bounds, ports, counters, drops by reason",
              kOptionalSwitch, [&api](const json& params) {
                  const std::optional<std::string> only = optional_string_param(params, "switch");
                  return refusing([&] { return api.list_switches(only); });
              });
    table.add("mac.list", "the learned MACs: switch, VLAN, MAC, port, seconds since last seen",
              kOptionalSwitch, [&api](const json& params) {
                  const std::optional<std::string> only = optional_string_param(params, "switch");
                  return refusing([&] { return api.list_macs(only); });
              });
}

}  // namespace vnet::control
