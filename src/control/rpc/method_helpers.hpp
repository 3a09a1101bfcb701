// What every part's control methods share (port_methods, switch_methods,
// lifecycle_methods, control_methods): the params as option-table text,
// the schemas' lookup of option keys, and how a refusal is answered.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "control/config/option_table.hpp"
#include "control/rpc/control_api.hpp"
#include "control/rpc/param_schema.hpp"
#include "control/rpc/rpc_error.hpp"

namespace vnet::control {

// Every param but the `structural` ones, as KEY = text: what a flag would
// say ("on"/"off" for booleans, "a,b" for lists).
Settings settings_of(const nlohmann::json& params,
                     std::initializer_list<std::string_view> structural);

// The param type of the option `key` of `Scope` (a ParamSchema's lookup of
// the keys it does not name); none: no such option.
template <OptionScope Scope>
std::optional<rpc::ParamType> option_param_type(std::string_view key) {
    const OptionSpec* option = find_option(Scope, key);
    return option != nullptr ? std::optional(param_type(*option)) : std::nullopt;
}

// What a ControlApi part refuses (std::exception) becomes -32000 with its
// reason; an RpcError keeps its own code.
template <typename F>
nlohmann::json refusing(F&& f) {
    try {
        return f();
    } catch (const rpc::RpcError&) {
        throw;
    } catch (const std::exception& e) {
        throw rpc::RpcError(rpc::ErrorCode::refused, e.what());
    }
}

// The schemas of methods in more than one part.
inline const rpc::ParamSchema kNoParams{};
inline const rpc::ParamSchema kRequiredName({{"name", rpc::ParamType::string, true}});

// A change made: its answer.
inline nlohmann::json done() {
    return nlohmann::json{{"ok", true}};
}

}  // namespace vnet::control
