#include "control/rpc/control_methods.hpp"

#include <algorithm>
#include <initializer_list>

#include "control/config/option_table.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;
using rpc::ParamSchema;
using rpc::ParamType;

// A schema-checked option value as the text its row parses: what a flag
// would say ("on"/"off" for booleans, "a,b" for lists).
std::string setting_text(const json& value) {
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_boolean()) {
        return value.get<bool>() ? "on" : "off";
    }
    if (value.is_array()) {
        std::string out;
        for (const json& item : value) {
            if (!out.empty()) {
                out += ',';
            }
            out += setting_text(item);
        }
        return out;
    }
    return value.dump();  // a non-negative integer
}

// Every param but the `structural` ones, as KEY = text.
Settings settings_of(const json& params, std::initializer_list<std::string_view> structural) {
    Settings settings;
    if (!params.is_object()) {
        return settings;
    }
    for (const auto& [key, value] : params.items()) {
        if (std::find(structural.begin(), structural.end(), key) == structural.end()) {
            settings.emplace_back(key, setting_text(value));
        }
    }
    return settings;
}

std::optional<ParamType> port_option_type(std::string_view key) {
    const OptionSpec* option = find_option(OptionScope::port, key);
    return option != nullptr ? std::optional(param_type(*option)) : std::nullopt;
}

std::optional<ParamType> switch_option_type(std::string_view key) {
    const OptionSpec* option = find_option(OptionScope::switch_, key);
    return option != nullptr ? std::optional(param_type(*option)) : std::nullopt;
}

// What the ControlApi refuses (std::exception) becomes -32000 with its
// reason; an RpcError keeps its own code.
template <typename F>
json refusing(F&& f) {
    try {
        return f();
    } catch (const rpc::RpcError&) {
        throw;
    } catch (const std::exception& e) {
        throw rpc::RpcError(rpc::ErrorCode::refused, e.what());
    }
}

// A change made: its answer.
json done() {
    return json{{"ok", true}};
}

const ParamSchema kNoParams{};
const ParamSchema kOptionalName({{"name", ParamType::string}});
const ParamSchema kRequiredName({{"name", ParamType::string, true}});
const ParamSchema kOptionalSwitch({{"switch", ParamType::string}});

}  // namespace

void add_control_methods(rpc::MethodTable& table, ControlApi& api) {
    using rpc::optional_string_param;
    using rpc::optional_uint32_param;
    using rpc::string_param;

    table.add("version", "vnetd's version", kNoParams, [](const json&) {
        return json{{"version", VNET_VERSION}};
    });
    table.add("stats", "every port's counters by queue and direction, as the stats file has them",
              kNoParams, [&api](const json&) { return api.stats(); });
    table.add("port.list", "the ports: name, type, where they are, queue pairs, peer, connections",
              kNoParams, [&api](const json&) { return api.list_ports(); });
    table.add("port.show",
              "vnetctl show: {name?}: each port's socket, negotiated features, memory regions, "
              "rings (size, indexes, kicks, calls), counters and drops",
              kOptionalName, [&api](const json& params) {
                  const std::optional<std::string> only = optional_string_param(params, "name");
                  return refusing([&] { return api.show_ports(only); });
              });
    table.add(
        "port.add",
        "add a port: {name, type, peer?, KEY: VALUE...} with the [[port]] keys of the config "
        "file; peer cross-connects it to a port in no cross-connect",
        ParamSchema({{"name", ParamType::string, true},
                     {"type", ParamType::string, true},
                     {"peer", ParamType::string}},
                    port_option_type, "name, type, peer and the [[port]] keys of the config file"),
        [&api](const json& params) {
            const std::string name = string_param(params, "name");
            const std::string type = string_param(params, "type");
            const std::string peer = optional_string_param(params, "peer").value_or("");
            const Settings settings = settings_of(params, {"name", "type", "peer"});
            return refusing([&] {
                api.add_port(name, type, peer, settings);
                return done();
            });
        });
    table.add("port.del", "remove a port: {name}; a connected guest is disconnected first",
              kRequiredName, [&api](const json& params) {
                  const std::string name = string_param(params, "name");
                  return refusing([&] {
                      api.remove_port(name);
                      return done();
                  });
              });
    table.add("port.set",
              "change a port's settings at run time: params name, "
              "ingress_policing_rate (kbit/s, 0 = off), ingress_policing_burst (kbit)",
              ParamSchema({{"name", ParamType::string, true},
                           {"ingress_policing_rate", ParamType::uint32},
                           {"ingress_policing_burst", ParamType::uint32}}),
              [&api](const json& params) {
                  const std::string name = string_param(params, "name");
                  const auto rate = optional_uint32_param(params, "ingress_policing_rate");
                  const auto burst = optional_uint32_param(params, "ingress_policing_burst");
                  if (!rate && !burst) {
                      throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                                          "nothing to set: give ingress_policing_rate and/or "
                                          "ingress_policing_burst");
                  }
                  return refusing([&] { return api.set_port_policing(name, rate, burst); });
              });
    table.add("reload", "re-read the config file and apply what changed (as SIGHUP does)",
              kNoParams, [&api](const json&) { return refusing([&] { return api.reload(); }); });
    table.add("upgrade",
              "upgrade in place: {binary?}; a new vnetd (default: ours as on disk now) takes over "
              "every port, then this one exits 0",
              ParamSchema({{"binary", ParamType::absolute_path}}), [&api](const json& params) {
                  const std::string binary = optional_string_param(params, "binary").value_or("");
                  return refusing([&] { return api.upgrade(binary); });
              });
    table.add("switch.add",
              "add a switch: {name, KEY: VALUE...} with the [[switch]] keys of the config file "
              "(mac_aging_s, mac_table_size, destination_hold_us)",
              ParamSchema({{"name", ParamType::string, true}}, switch_option_type,
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
