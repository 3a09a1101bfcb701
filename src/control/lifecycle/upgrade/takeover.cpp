#include "control/lifecycle/upgrade/takeover.hpp"

#include <fcntl.h>

#include <chrono>
#include <stdexcept>

#include "control/lifecycle/upgrade/handover_message.hpp"
#include "control/ports/port_factory.hpp"

namespace vnet::control::upgrade {
namespace {

// Between two offers from a predecessor that is only sending.
constexpr std::chrono::milliseconds kOfferTimeout{5000};
// The predecessor's letting go: stopping workers and closing sessions.
constexpr std::chrono::milliseconds kReleaseTimeout{10000};

}  // namespace

Takeover::Takeover(Logger log, int takeover_fd, const std::string& control_socket)
    : log_(std::move(log)),
      predecessor_(
          std::make_unique<HandoverLink>(UniqueFd(::fcntl(takeover_fd, F_DUPFD_CLOEXEC, 0)))) {
    if (predecessor_->fd() < 0) {
        throw std::runtime_error("--takeover-fd " + std::to_string(takeover_fd) + " is not open");
    }
    for (;;) {
        auto got = predecessor_->receive(kOfferTimeout);
        if (auto* error = std::get_if<std::string>(&got)) {
            throw std::runtime_error("taking over: " + *error);
        }
        auto& [message, fds] = std::get<ReceivedHandover>(got);
        if (message.type == HandoverType::end) {
            break;
        }
        if (message.type != HandoverType::offer) {
            throw std::runtime_error("taking over: an offer expected, got " +
                                     std::string(to_string(message.type)));
        }
        if (message.kind == kControlKind) {
            if (message.key == control_socket) {
                control_listener_ = std::move(fds.front());
            }
            continue;
        }
        ports_[message.name] = {message.kind, message.key, std::move(fds)};
    }
}

std::vector<UniqueFd>* Takeover::fds_for(const PortConfig& pc) {
    auto it = ports_.find(pc.name);
    if (it == ports_.end()) {
        return nullptr;
    }
    const PortFactoryEntry* factory = find_port_factory(to_string(pc.type()));
    HandedOverPort& h = it->second;
    if (factory == nullptr || factory->handover_key == nullptr || h.kind != factory->kind ||
        h.key != factory->handover_key(pc)) {
        log_->info("port {}: changed since the vnetd we replace ({} '{}'): built afresh", pc.name,
                   h.kind, h.key);
        return nullptr;
    }
    return &h.fds;
}

void Takeover::close_unused() {
    for (auto& [name, h] : ports_) {
        if (!h.fds.empty() && h.fds.front()) {
            log_->info("port {} of the vnetd we replace is not in our config: not taken over",
                       name);
        }
    }
    ports_.clear();
}

void Takeover::complete() {
    predecessor_->send(handover_of_type(HandoverType::ready));
    auto got = predecessor_->receive(kReleaseTimeout);
    // Gone without a word (it crashed, or was killed) is as good as released:
    // its fds and sessions went with it.
    if (auto* error = std::get_if<std::string>(&got); error != nullptr && *error != "closed") {
        log_->warn("taking over: the vnetd we replace did not say it let go: {}", *error);
    }
    log_->info("took over from the vnetd we replace");
    predecessor_.reset();
}

}  // namespace vnet::control::upgrade
