// ControlClient: one connection to vnetd's control socket, one JSON-RPC
// request at a time (a request line out, its response line back).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/unique_fd.hpp"

namespace vnet::rpc_client {

// What vnetd answered with an error object, or why it could not be asked.
struct ControlError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ControlClient {
public:
    // Throws ControlError naming the path and the reason (no vnetd there,
    // permission denied...).
    explicit ControlClient(const std::string& socket_path);

    // The method's result; throws ControlError with vnetd's message.
    nlohmann::json call(const std::string& method,
                        const nlohmann::json& params = nlohmann::json::object());

private:
    std::string read_line();

    std::string path_;
    UniqueFd fd_;
    std::string buffered_;
    uint64_t next_id_ = 1;
};

}  // namespace vnet::rpc_client
