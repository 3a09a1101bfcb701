// Upgrade in place, the new side (docs/USAGE.md "Upgrade in place"): the
// fds the vnetd we replace offers over --takeover-fd, taken before our
// ports are built; each port's builder takes those whose factory key still
// matches; "ready" and the wait until the old one let go, before our
// workers start. successor.hpp is the old side's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "control/config/config.hpp"
#include "control/lifecycle/upgrade/handover_link.hpp"

namespace vnet::control::upgrade {

// The kind the control socket's listener is offered under.
inline constexpr std::string_view kControlKind = "control";

class Takeover {
public:
    // Receives every offer up to "end" from the socket `takeover_fd` (a
    // copy of it: main() keeps the original to say why if we throw); the
    // control socket's listener is kept when its path is `control_socket`.
    // Throws std::runtime_error naming what went wrong.
    Takeover(Logger log, int takeover_fd, const std::string& control_socket);

    // The fds offered for the port `config` names, if its kind and key are
    // what they were in the vnetd we replace; nullptr: build it afresh.
    std::vector<UniqueFd>* fds_for(const PortConfig& config);
    // The fds no port took: logged, then closed.
    void close_unused();
    // The control socket's listener, if it was offered (invalid: none).
    UniqueFd take_control_listener() { return std::move(control_listener_); }
    // Says ready and waits until the vnetd we replace let go of everything.
    void complete();

private:
    struct HandedOverPort {
        std::string kind;
        std::string key;
        std::vector<UniqueFd> fds;
    };
    Logger log_;
    std::unique_ptr<HandoverLink> predecessor_;
    std::map<std::string, HandedOverPort> ports_;
    UniqueFd control_listener_;
};

}  // namespace vnet::control::upgrade
