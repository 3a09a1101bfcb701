// ControlClient: one connection to vnetd's control socket, one JSON-RPC
// request at a time (a request line out, its response line back).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "common/unique_fd.hpp"

namespace vnet::rpc_client {

// What vnetd answered with an error object, or why it could not be asked.
struct ControlError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// vnetd took the request but gave no answer within the client's timeout: a
// wedged or very busy daemon, which a caller may retry later.
struct ControlTimeout : ControlError {
    using ControlError::ControlError;
};

// Long enough for the slowest method (a port.del that waits for its guest
// to let go, an upgrade handing every port over), short enough that a
// wedged vnetd does not hold a script, a probe or a CNI runtime forever.
inline constexpr std::chrono::seconds kDefaultAnswerTimeout{60};

class ControlClient {
public:
    // Throws ControlError naming the path and the reason (no vnetd there,
    // permission denied...). A call fails with ControlTimeout when vnetd
    // neither takes its request nor sends a byte of the answer for
    // `answer_timeout` (zero: no limit).
    explicit ControlClient(const std::string& socket_path,
                           std::chrono::seconds answer_timeout = kDefaultAnswerTimeout);

    // The method's result; throws ControlError with vnetd's message.
    nlohmann::json call(const std::string& method,
                        const nlohmann::json& params = nlohmann::json::object());

private:
    std::string read_line();
    ControlTimeout no_answer() const;

    std::string path_;
    std::chrono::seconds answer_timeout_;
    UniqueFd fd_;
    std::string buffered_;
    uint64_t next_id_ = 1;
};

}  // namespace vnet::rpc_client
