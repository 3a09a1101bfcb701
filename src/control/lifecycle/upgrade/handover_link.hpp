// HandoverLink: one end of the socketpair between the vnetd being replaced
// and its successor (handover_message.hpp says what goes over it). Blocking
// with a deadline on every receive: both sides are the control thread of a
// process that must not wait forever on the other (a successor that hangs
// is killed, a predecessor that vanished counts as released).
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/unique_fd.hpp"
#include "control/lifecycle/upgrade/handover_message.hpp"

namespace vnet::control::upgrade {

struct ReceivedHandover {
    HandoverMessage message;
    std::vector<UniqueFd> fds;
};

class HandoverLink {
public:
    explicit HandoverLink(UniqueFd socket) : socket_(std::move(socket)) {}

    int fd() const { return socket_.get(); }
    // False (with errno) if the other side is gone.
    bool send(const HandoverMessage& message, std::span<const int> fds = {});
    // The next message, or why there is none: "closed" when the other side
    // closed its end (exited), "timed out after N ms", or what was wrong
    // with the message (its fds are closed then).
    std::variant<ReceivedHandover, std::string> receive(std::chrono::milliseconds timeout);

private:
    UniqueFd socket_;
};

}  // namespace vnet::control::upgrade
