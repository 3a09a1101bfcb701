// The control socket: what vnetctl can ask of a running vnetd. Its methods
// are the port table's, the switch table's and the daemon's own
// (rpc/control_api.hpp); each runs on the control thread between other
// control-plane events, so it sees ports and counters exactly as the stats
// report does.
#include <cerrno>
#include <system_error>

#include "control/daemon.hpp"
#include "control/rpc/audited_control.hpp"
#include "control/rpc/control_methods.hpp"

namespace vnet::control {

void Daemon::open_control_socket() {
    if (config_.control_socket.empty()) {
        return;
    }
    control_api_ = std::make_unique<AuditedControl>(
        ControlApi{.ports = ports_, .switches = switches_, .daemon = *this}, log_);
    add_control_methods(control_methods_, control_api_->api());
    control_methods_.log_refusals(log_);
    rpc::ControlServerOptions o;
    o.path = config_.control_socket;
    o.mode = config_.control_socket_mode;
    o.group = config_.control_socket_group;
    if (handed_over_control_) {
        o.handed_over_fd = handed_over_control_.release();  // the server owns it from here
    }
    try {
        control_server_ = std::make_unique<rpc::ControlServer>(reactor_, o, control_methods_);
    } catch (const std::system_error& e) {
        // Only the default may be taken by another vnetd on the host: this
        // one still forwards, it just cannot be driven. A path given on
        // purpose that cannot be used is an error like any other, and so is
        // any for a vnetd started empty (it would wait for nobody).
        if (config_.control_socket != kDefaultControlSocket || e.code().value() != EADDRINUSE ||
            config_.ports.empty()) {
            throw;
        }
        log_->warn("{}; running without a control socket (give --control-socket PATH)", e.what());
    }
}

}  // namespace vnet::control
