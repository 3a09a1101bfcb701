#include "control/switches/mac_flush_methods.hpp"

#include "control/rpc/method_helpers.hpp"

namespace vnet::control {

void add_mac_flush_methods(rpc::MethodTable& table, DaemonControl& api) {
    using rpc::optional_string_param;
    table.add(
        "mac.flush",
        "forget learned MACs: {switch?, port?}; none: every switch's; {\"flushed\": N}",
        rpc::ParamSchema({{"switch", rpc::ParamType::string}, {"port", rpc::ParamType::string}}),
        [&api](const nlohmann::json& params) {
            const std::optional<std::string> sw = optional_string_param(params, "switch");
            const std::optional<std::string> port = optional_string_param(params, "port");
            return refusing([&] { return api.flush_macs(sw, port); });
        });
}

}  // namespace vnet::control
