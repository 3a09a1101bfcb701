#include "control/ports/port_methods.hpp"

#include "control/rpc/method_helpers.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;
using rpc::ParamSchema;
using rpc::ParamType;

const ParamSchema kOptionalName({{"name", ParamType::string}});

}  // namespace

void add_port_methods(rpc::MethodTable& table, PortControl& api) {
    using rpc::optional_string_param;
    using rpc::optional_uint32_param;
    using rpc::string_param;

    table.add("port.list", "the ports: name, type, where they are, queue pairs, peer, connections",
              kNoParams, [&api](const json&) { return api.list_ports(); });
    table.add("port.show",
              "vnetctl show: {name?}: each port's socket, negotiated features, memory regions, "
              "rings (size, indexes, kicks, calls), counters and drops",
              kOptionalName, [&api](const json& params) {
                  const std::optional<std::string> only = optional_string_param(params, "name");
                  return refusing([&] { return api.show_ports(only); });
              });
    table.add("port.add",
              "add a port: {name, type, peer?, KEY: VALUE...} with the [[port]] keys of the config "
              "file; peer cross-connects it to a port in no cross-connect",
              ParamSchema({{"name", ParamType::string, true},
                           {"type", ParamType::string, true},
                           {"peer", ParamType::string}},
                          &option_param_type<OptionScope::port>,
                          "name, type, peer and the [[port]] keys of the config file"),
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
}

}  // namespace vnet::control
