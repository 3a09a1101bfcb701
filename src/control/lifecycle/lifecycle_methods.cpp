#include "control/lifecycle/lifecycle_methods.hpp"

#include "control/rpc/method_helpers.hpp"

namespace vnet::control {

void add_lifecycle_methods(rpc::MethodTable& table, DaemonControl& api) {
    using nlohmann::json;
    using rpc::optional_string_param;
    using rpc::ParamSchema;
    using rpc::ParamType;

    table.add("reload", "re-read the config file and apply what changed (as SIGHUP does)",
              kNoParams, [&api](const json&) { return refusing([&] { return api.reload(); }); });
    table.add("upgrade",
              "upgrade in place: {binary?}; a new vnetd (default: ours as on disk now) takes over "
              "every port, then this one exits 0",
              ParamSchema({{"binary", ParamType::absolute_path}}), [&api](const json& params) {
                  const std::string binary = optional_string_param(params, "binary").value_or("");
                  return refusing([&] { return api.upgrade(binary); });
              });
}

}  // namespace vnet::control
