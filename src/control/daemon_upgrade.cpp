// Upgrade in place (docs/USAGE.md "Upgrade in place"): the old vnetd starts
// the new binary, hands it every listening socket and tap queue by fd
// (handover_message.hpp has the exchange), and only once the new one has
// built every port on them does the old one stop its workers and close its
// guests' sessions; the front ends reconnect to the socket the new one now
// serves. No packet is handled by both: the new one starts its workers
// after the old one said it let go.
#include <unistd.h>

#include "control/daemon.hpp"
#include "control/lifecycle/upgrade/successor.hpp"

namespace vnet::control {
namespace {

using upgrade::HandoverMessage;
using upgrade::HandoverType;
using upgrade::kControlKind;
using upgrade::ReceivedHandover;

// Building every port (taps, XDP, sockets) takes far less; a successor
// still not ready by then is taken for hung and killed.
constexpr std::chrono::milliseconds kReadyTimeout{20000};
constexpr std::chrono::milliseconds kReapGrace{2000};

struct Offer {
    HandoverMessage message;
    std::vector<int> fds;
};

}  // namespace

// --- the old side ---------------------------------------------------------

nlohmann::json Daemon::upgrade(const std::string& requested) {
    const std::string binary = requested.empty() ? upgrade::current_binary() : requested;
    // Every offer first: a port that cannot be handed over refuses the
    // upgrade before anything is started.
    std::vector<Offer> offers;
    for (PortEntry& p : ports_) {
        const PortFactoryEntry* factory = find_port_factory(p.kind);
        const PortConfig* pc = config_.find_port(p.port->name());
        if (factory == nullptr || factory->handover_fds == nullptr || pc == nullptr) {
            continue;
        }
        std::vector<int> fds = factory->handover_fds(*p.port, p.service.get());
        if (!fds.empty()) {
            offers.push_back({upgrade::handover_offer(std::string(p.kind), pc->name,
                                                      factory->handover_key(*pc), fds.size()),
                              std::move(fds)});
        }
    }
    if (control_server_) {
        offers.push_back(
            {upgrade::handover_offer(std::string(kControlKind), "", control_server_->path(), 1),
             {control_server_->listen_fd()}});
    }
    const auto started = std::chrono::steady_clock::now();
    upgrade::Successor successor = upgrade::start_successor(binary, upgrade::own_arguments());
    log_->info("upgrade: started {} (pid {}), handing over {} socket(s)/tap(s)", binary,
               successor.pid, offers.size());
    // A send fails only when the child is gone: its exit status says why.
    bool sent = true;
    for (const Offer& o : offers) {
        sent = sent && successor.link.send(o.message, o.fds);
    }
    sent = sent && successor.link.send(upgrade::handover_of_type(HandoverType::end));
    auto answer = successor.link.receive(kReadyTimeout);
    std::string failure;
    if (auto* error = std::get_if<std::string>(&answer)) {
        const std::string how = upgrade::reap_successor(successor.pid, kReapGrace);
        failure = *error == "closed" ? binary + " " + how + " before it was ready"
                                     : binary + ": " + *error + " (" + how + ")";
    } else if (auto& m = std::get<ReceivedHandover>(answer).message;
               m.type != HandoverType::ready) {
        const std::string how = upgrade::reap_successor(successor.pid, kReapGrace);
        failure =
            binary + ": " +
            (m.type == HandoverType::failed ? m.reason : "sent " + std::string(to_string(m.type))) +
            " (" + how + ")";
    }
    if (!failure.empty()) {
        log_->error("upgrade failed, this vnetd keeps running: {}", failure);
        throw std::runtime_error("upgrade failed, vnetd keeps running: " + failure);
    }
    systemd_.main_pid(successor.pid);
    hand_over_to_successor();
    successor.link.send(upgrade::handover_of_type(HandoverType::released));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    log_->info("upgrade: pid {} took over after {} ms; exiting", successor.pid, ms);
    // After this answer is written: the reactor runs the timer on its next turn.
    reactor_.schedule(std::chrono::milliseconds(0), [this] { stop(); });
    return {{"pid", successor.pid}, {"binary", binary}, {"handover_ms", ms}};
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
