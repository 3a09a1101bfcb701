// Upgrade in place, the old side: what this vnetd offers its successor and
// how it lets go; the exchange is lifecycle/upgrade/upgrader.hpp's.
#include "control/daemon.hpp"

namespace vnet::control {

nlohmann::json Daemon::upgrade(const std::string& binary) {
    // Every offer first: a port that cannot be handed over refuses the
    // upgrade before anything is started.
    std::vector<upgrade::HandoverOffer> offers = ports_.handover_offers();
    if (control_server_) {
        offers.push_back({upgrade::handover_offer(std::string(upgrade::kControlKind), "",
                                                  control_server_->path(), 1),
                          {control_server_->listen_fd()}});
    }
    nlohmann::json done = upgrader_.upgrade(binary, offers, [this](pid_t successor) {
        systemd_.main_pid(successor);
        hand_over_to_successor();
    });
    // After this answer is written: the reactor runs the timer on its next turn.
    reactor_.schedule(std::chrono::milliseconds(0), [this] { stop(); });
    return done;
}

// The successor holds every fd by now: stop accepting (the paths stay, they
// are its), let the guests go (their front ends reconnect to it), stop the
// workers so that no packet is moved here any more.
void Daemon::hand_over_to_successor() {
    handed_over_ = true;
    if (control_server_) {
        control_server_->hand_over_listener();  // this client still gets its answer
    }
    metrics_endpoint_.reset();  // the successor binds the address after us
    for (PortEntry& p : ports_) {
        if (p.service) {
            p.service->hand_over();
        }
    }
    ports_.stop_services();
    for (auto& w : workers_) {
        w->stop();
    }
}

}  // namespace vnet::control
