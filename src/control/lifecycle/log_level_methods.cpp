#include "control/lifecycle/log_level_methods.hpp"

#include "common/log_levels.hpp"
#include "control/rpc/method_helpers.hpp"

namespace vnet::control {

void add_log_level_methods(rpc::MethodTable& table, DaemonControl& api) {
    std::string help = "the log level: {level?} sets it (";
    help += kLogLevels;  // step by step: g++ 12 warns falsely on a chain of +
    help += "); {\"level\": the level now}";
    table.add("log.level", std::move(help), rpc::ParamSchema({{"level", rpc::ParamType::string}}),
              [&api](const nlohmann::json& params) {
                  const std::optional<std::string> level =
                      rpc::optional_string_param(params, "level");
                  if (level && !is_log_level(*level)) {
                      throw rpc::RpcError(rpc::ErrorCode::invalid_params,
                                          log_level_refusal("level", *level));
                  }
                  return refusing([&] { return api.log_level(level); });
              });
}

}  // namespace vnet::control
