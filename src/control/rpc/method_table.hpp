// MethodTable: JSON-RPC 2.0 (https://www.jsonrpc.org/specification) over
// lines. A request line is one JSON text: an object, or an array of them (a
// batch). Every request with an id gets exactly one response; one without
// (a notification) gets none. The table knows nothing of sockets: the
// control server feeds it lines and writes back what it returns.
//
// A handler returns the result or throws RpcError; anything else it throws
// becomes an internal error naming what went wrong. A handler runs on the
// control thread, like every other control-plane change.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace vnet::control::rpc {

// The spec's codes, and the one application code vnetd uses for a request
// that is well formed but cannot be done (unknown port, duplicate name...).
enum class ErrorCode : int {
    parse_error = -32700,
    invalid_request = -32600,
    method_not_found = -32601,
    invalid_params = -32602,
    internal_error = -32603,
    refused = -32000,
};

struct RpcError : std::runtime_error {
    RpcError(ErrorCode c, const std::string& message) : std::runtime_error(message), code(c) {}
    ErrorCode code;
};

class MethodTable {
public:
    using Handler = std::function<nlohmann::json(const nlohmann::json& params)>;

    // `help` is what `vnetctl` and the "help" method show.
    void add(std::string name, std::string help, Handler handler);

    // The response line (no trailing newline) for one request line, or
    // nothing if it held only notifications.
    std::optional<std::string> handle_line(std::string_view line) const;

    // Every method with its help, by name (the built-in "help" method).
    nlohmann::json describe() const;

private:
    struct Method {
        std::string help;
        Handler handler;
    };

    std::optional<nlohmann::json> handle_request(const nlohmann::json& request) const;

    std::map<std::string, Method, std::less<>> methods_;
};

// Helpers for handlers: a required/optional parameter of the given type, or
// RpcError(invalid_params) naming it.
const nlohmann::json& required_param(const nlohmann::json& params, const char* name);
std::string string_param(const nlohmann::json& params, const char* name);
std::optional<std::string> optional_string_param(const nlohmann::json& params, const char* name);
// An unsigned integer that fits 32 bits, or RpcError(invalid_params).
std::optional<uint32_t> optional_uint32_param(const nlohmann::json& params, const char* name);

}  // namespace vnet::control::rpc
