// MethodTable: JSON-RPC 2.0 (https://www.jsonrpc.org/specification) over
// lines. A request line is one JSON text: an object, or an array of them (a
// batch). Every request with an id gets exactly one response; one without
// (a notification) gets none. The table knows nothing of sockets: the
// control server feeds it lines and writes back what it returns.
//
// A handler returns the result or throws RpcError; anything else it throws
// becomes an internal error naming what went wrong. A handler runs on the
// control thread, like every other control-plane change.
//
// A line is hostile input, and nothing in it may cost more than its length:
// it is parsed without recursion and refused (-32600) past kMaxDepth levels
// of nesting, so that nothing after the parser (the schema check, the
// handlers, dump()) ever recurses deeper than that; params reach a handler
// by reference, never copied; and a handler is called only with params
// that fit its ParamSchema.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/log.hpp"
#include "control/rpc/param_schema.hpp"
#include "control/rpc/rpc_error.hpp"

namespace vnet::control::rpc {

class MethodTable {
public:
    using Handler = std::function<nlohmann::json(const nlohmann::json& params)>;

    // Objects and arrays nested deeper than this are refused: the deepest
    // request vnetd takes (a batch holding a call whose params hold a list)
    // is 4 levels.
    static constexpr int kMaxDepth = 32;
    // Requests in one batch: each may have an answer as big as the stats,
    // and the control server can bound a client's unread answers only
    // between lines.
    static constexpr size_t kMaxBatch = 64;

    // `help` is what `vnetctl` and the "help" method show; `params` is what
    // the handler takes.
    void add(std::string name, std::string help, ParamSchema params, Handler handler);

    // The response line (no trailing newline) for one request line, or
    // nothing if it held only notifications.
    std::optional<std::string> handle_line(std::string_view line) const;

    // Every method with its help, by name (the built-in "help" method).
    nlohmann::json describe() const;

    // Log each request the table refuses (one info line: the caller, the
    // method and the answer's code and message), so that an operator sees in
    // the daemon's log what was asked and why nothing changed. Unset (tests,
    // fuzzing), refusals are only answered.
    void log_refusals(Logger log);

private:
    struct Method {
        std::string help;
        ParamSchema params;
        Handler handler;
    };

    std::optional<nlohmann::json> handle_request(const nlohmann::json& request) const;
    // The error response for a refused request, logged if log_refusals was
    // given a log; `method` is empty when the request named none.
    nlohmann::json refusal(const nlohmann::json& id, ErrorCode code, const std::string& message,
                           std::string_view method = {}) const;

    std::map<std::string, Method, std::less<>> methods_;
    Logger refusal_log_;
};

// Helpers for handlers: a required/optional parameter of the given type, or
// RpcError(invalid_params) naming it.
const nlohmann::json& required_param(const nlohmann::json& params, const char* name);
std::string string_param(const nlohmann::json& params, const char* name);
std::optional<std::string> optional_string_param(const nlohmann::json& params, const char* name);
// An unsigned integer that fits 32 bits, or RpcError(invalid_params).
std::optional<uint32_t> optional_uint32_param(const nlohmann::json& params, const char* name);

}  // namespace vnet::control::rpc
