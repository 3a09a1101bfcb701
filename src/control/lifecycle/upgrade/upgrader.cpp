#include "control/lifecycle/upgrade/upgrader.hpp"

#include <chrono>
#include <stdexcept>

#include "control/lifecycle/upgrade/successor.hpp"

namespace vnet::control::upgrade {
namespace {

// Building every port (taps, XDP, sockets) takes far less; a successor
// still not ready by then is taken for hung and killed.
constexpr std::chrono::milliseconds kReadyTimeout{20000};
constexpr std::chrono::milliseconds kReapGrace{2000};

// Why the successor is not ready ("" if it is), once it answered or died.
std::string failure_of(Successor& successor, const std::string& binary) {
    auto answer = successor.link.receive(kReadyTimeout);
    if (auto* error = std::get_if<std::string>(&answer)) {
        const std::string how = reap_successor(successor.pid, kReapGrace);
        return *error == "closed" ? binary + " " + how + " before it was ready"
                                  : binary + ": " + *error + " (" + how + ")";
    }
    if (auto& m = std::get<ReceivedHandover>(answer).message; m.type != HandoverType::ready) {
        const std::string how = reap_successor(successor.pid, kReapGrace);
        return binary + ": " +
               (m.type == HandoverType::failed ? m.reason
                                               : "sent " + std::string(to_string(m.type))) +
               " (" + how + ")";
    }
    return {};
}

}  // namespace

nlohmann::json Upgrader::upgrade(const std::string& requested,
                                 const std::vector<HandoverOffer>& offers,
                                 const std::function<void(pid_t)>& let_go) {
    const std::string binary = requested.empty() ? current_binary() : requested;
    const auto started = std::chrono::steady_clock::now();
    Successor successor = start_successor(binary, own_arguments());
    log_->info("upgrade: started {} (pid {}), handing over {} socket(s)/tap(s)", binary,
               successor.pid, offers.size());
    // A send fails only when the child is gone: its exit status says why.
    bool sent = true;
    for (const HandoverOffer& o : offers) {
        sent = sent && successor.link.send(o.message, o.fds);
    }
    sent = sent && successor.link.send(handover_of_type(HandoverType::end));
    if (const std::string failure = failure_of(successor, binary); !failure.empty()) {
        log_->error("upgrade failed, this vnetd keeps running: {}", failure);
        throw std::runtime_error("upgrade failed, vnetd keeps running: " + failure);
    }
    let_go(successor.pid);
    successor.link.send(handover_of_type(HandoverType::released));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    log_->info("upgrade: pid {} took over after {} ms; exiting", successor.pid, ms);
    return {{"pid", successor.pid}, {"binary", binary}, {"handover_ms", ms}};
}

}  // namespace vnet::control::upgrade
