// RpcError: how a control method, or the table that calls it, says no. Its
// code is one of JSON-RPC 2.0's (https://www.jsonrpc.org/specification §5.1)
// or vnetd's one application code; its message goes to the client as is.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace vnet::control::rpc
