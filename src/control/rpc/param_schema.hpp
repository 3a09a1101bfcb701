// ParamSchema: what a control method takes, checked before its handler runs.
//
// The control socket is hostile input (DESIGN.md "Rules every part keeps"):
// a request is typed against its method before anything acts on it, so a
// handler only ever sees the names and types it declared. A wrong type, a
// missing required parameter or a name the method does not take is
// RpcError(invalid_params) naming the parameter and what it must be, and
// nothing has changed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vnet::control::rpc {

enum class ParamType : uint8_t {
    string,
    // A string that starts with '/': the daemon's working directory means
    // nothing to a client (it is / under systemd), so a relative path is
    // refused rather than resolved against it.
    absolute_path,
    uint32,
    boolean,
    // An option-table value, as `vnetctl --set KEY=VALUE` sends it (text)
    // or as a JSON client writes it: the row's own parser checks the value.
    integer_or_text,  // 1500 or "1500"
    on_off,           // true/false or "on"/"off"
    list,             // "a,b" or ["a", "b", 10]
    // Any JSON value (already bounded in depth by the method table).
    any,
};

// What a value of `type` must be, for error messages: "a string", ...
std::string_view describe(ParamType type);

struct ParamSpec {
    std::string_view name;
    ParamType type;
    bool required = false;
};

struct ParamSchema {
    // Names beyond `named` (port.add's and switch.add's option-table keys):
    // the type of `name`, or nothing if the method does not take it. Null:
    // only `named` are taken.
    using ExtraParams = std::optional<ParamType> (*)(std::string_view name);

    ParamSchema() = default;  // takes no params
    explicit ParamSchema(std::vector<ParamSpec> params, ExtraParams more = nullptr,
                         std::string_view note = {})
        : named(std::move(params)), extra(more), takes_note(note) {}

    std::vector<ParamSpec> named;
    ExtraParams extra = nullptr;
    // Said after "unknown parameter 'x'": what the method takes instead
    // (empty: the list of `named`).
    std::string_view takes_note;

    // Throws RpcError(invalid_params) unless `params` (an object, or an
    // empty array for "none") fits the schema.
    void check(std::string_view method, const nlohmann::json& params) const;
};

// Throws RpcError(invalid_params) unless `value` is of `type`:
// "parameter 'NAME' must be TYPE, not KIND".
void check_param(std::string_view name, const nlohmann::json& value, ParamType type);

}  // namespace vnet::control::rpc
