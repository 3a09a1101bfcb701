#include "control/rpc/control_methods.hpp"

#include "common/build_info.hpp"
#include "control/lifecycle/lifecycle_methods.hpp"
#include "control/lifecycle/log_level_methods.hpp"
#include "control/ports/port_methods.hpp"
#include "control/rpc/method_helpers.hpp"
#include "control/switches/mac_flush_methods.hpp"
#include "control/switches/switch_methods.hpp"
#include "control/workers/worker_methods.hpp"

namespace vnet::control {

using nlohmann::json;

namespace {

// The stats with the one port named `port` left in "ports".
json only_port(json stats, const std::string& port) {
    json kept = json::array();
    if (stats.is_object() && stats["ports"].is_array()) {
        for (json& p : stats["ports"]) {
            if (p.value("name", "") == port) {
                kept.push_back(std::move(p));
            }
        }
    }
    if (kept.empty()) {
        throw rpc::RpcError(rpc::ErrorCode::refused, "no port named '" + port + "'");
    }
    stats["ports"] = std::move(kept);
    return stats;
}

// options.list: the option table's rows of `scope` (none: all), as a client
// needs them to offer the keys (vnetctl's flags): each row's key, scope,
// the port kind it is for (if one), its value's shape, flag and help.
json option_rows(const std::optional<std::string>& scope) {
    json out = json::array();
    bool scope_known = !scope;
    for (const OptionSpec& o : option_table()) {
        if (scope && *scope != to_string(o.scope)) {
            continue;
        }
        scope_known = true;
        json row{{"key", std::string(o.key)},
                 {"scope", to_string(o.scope)},
                 {"value", std::string(o.value_name)},
                 {"help", std::string(o.help)}};
        if (o.port_type) {
            row["kind"] = to_string(*o.port_type);
        }
        if (o.scope != OptionScope::switch_) {  // switches have no flags
            row["flag"] = flag_of(o);
        }
        out.push_back(std::move(row));
    }
    if (!scope_known) {
        throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                            "no option scope '" + *scope + "' (daemon, datapath, port, switch)");
    }
    return out;
}

}  // namespace

void add_control_methods(rpc::MethodTable& table, const ControlApi& api) {
    table.add("version", "vnetd's version and the commit it was built from", kNoParams,
              [](const json&) {
                  return json{{"version", build_info::version()}, {"commit", build_info::commit()}};
              });
    table.add("stats",
              "every port's counters by queue and direction, as the stats file has them; "
              "{port?}: that port's only",
              rpc::ParamSchema({{"port", rpc::ParamType::string}}),
              [&daemon = api.daemon](const json& params) {
                  const std::optional<std::string> port =
                      rpc::optional_string_param(params, "port");
                  json all = daemon.stats();
                  return port ? only_port(std::move(all), *port) : all;
              });
    table.add("options.list",
              "the option table: {scope?} (daemon, datapath, port, switch): each key, its scope, "
              "the port kind it is for, its value, flag and help",
              rpc::ParamSchema({{"scope", rpc::ParamType::string}}), [](const json& params) {
                  return option_rows(rpc::optional_string_param(params, "scope"));
              });
    add_port_methods(table, api.ports);
    add_lifecycle_methods(table, api.daemon);
    add_switch_methods(table, api.switches);
    add_mac_flush_methods(table, api.daemon);
    add_worker_methods(table, api.daemon);
    add_log_level_methods(table, api.daemon);
}

}  // namespace vnet::control
