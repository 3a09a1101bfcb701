// Upgrade in place, the old side (docs/USAGE.md "Upgrade in place"): the
// old vnetd starts the new binary, hands it every listening socket and tap
// queue by fd (handover_message.hpp has the exchange), and only once the
// new one has built every port on them does the old one let go of its
// own (workers stopped, guests' sessions closed); the front ends reconnect
// to the socket the new one now serves. No packet is handled by both: the
// new one starts its workers after the old one said it let go.
// takeover.hpp is the new side's.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/lifecycle/upgrade/handover_message.hpp"

namespace vnet::control::upgrade {

// One fd set offered to the successor: a port's, or the control socket's
// listener (kind kControlKind).
struct HandoverOffer {
    HandoverMessage message;
    std::vector<int> fds;
};

class Upgrader {
public:
    explicit Upgrader(Logger log) : log_(std::move(log)) {}

    // Starts `binary` (empty: ours, as it is on disk now) with our command
    // line, hands it `offers` and waits until it is ready; then
    // `let_go(successor pid)` gives everything up and the successor is told
    // so. What happened, as JSON. Throws std::runtime_error with the reason
    // when the new one fails (then nothing was let go).
    nlohmann::json upgrade(const std::string& binary, const std::vector<HandoverOffer>& offers,
                           const std::function<void(pid_t)>& let_go);

private:
    Logger log_;
};

}  // namespace vnet::control::upgrade
