#include "control/systemd/watchdog.hpp"

#include <string>

namespace vnet::control {

Watchdog::Watchdog(io::Reactor& reactor, const SystemdNotify& notify,
                   std::vector<dataplane::Worker*> workers, Logger log)
    : reactor_(reactor),
      notify_(notify),
      workers_(std::move(workers)),
      log_(std::move(log)),
      posted_(workers_.size(), 0),
      answered_(std::make_shared<std::vector<std::atomic<uint64_t>>>(workers_.size())),
      reported_stall_(workers_.size(), false) {
    if (!notify_.watchdog_interval()) {
        return;
    }
    interval_ = *notify_.watchdog_interval();
    log_->info(
        "systemd watchdog: WATCHDOG=1 every {} ms while the control loop and {} worker(s) "
        "answer",
        interval_.count(), workers_.size());
    tick();
}

Watchdog::~Watchdog() {
    if (timer_ != 0) {
        reactor_.cancel(timer_);
    }
}

void Watchdog::tick() {
    bool all_answered = true;
    for (size_t i = 0; i < workers_.size(); ++i) {
        const bool answered = (*answered_)[i].load(std::memory_order_acquire) == posted_[i];
        if (!answered) {
            all_answered = false;
            if (!reported_stall_[i]) {
                reported_stall_[i] = true;
                log_->error(
                    "worker {} has not run a command for {} ms: no WATCHDOG=1 until it "
                    "does",
                    i, interval_.count());
                notify_.status("worker " + std::to_string(i) + " stalled");
            }
            continue;  // its probe is still queued: one at a time
        }
        reported_stall_[i] = false;
        const uint64_t probe = ++posted_[i];
        workers_[i]->post([answered = answered_, i, probe] {
            (*answered)[i].store(probe, std::memory_order_release);
        });
    }
    if (all_answered) {
        notify_.watchdog();
    }
    timer_ = reactor_.schedule(interval_, [this] { tick(); });
}

}  // namespace vnet::control
