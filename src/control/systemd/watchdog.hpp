// Watchdog: systemd's WatchdogSec, kept by the control loop. Every
// interval (SystemdNotify::watchdog_interval) a reactor timer sends
// WATCHDOG=1, which proves the control thread runs, but only if every
// worker ran the probe posted to it at the previous tick, which proves
// the workers still come round to their commands (a worker stuck inside a
// turn never does). The probe is one posted command per worker per
// interval, a wake-up an idle event-mode worker takes in microseconds; it
// never blocks the control thread, so a stuck worker stops the pings
// (systemd then restarts vnetd) while SIGTERM still works.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/log.hpp"
#include "control/systemd/systemd_notify.hpp"
#include "dataplane/worker.hpp"
#include "io/reactor.hpp"

namespace vnet::control {

class Watchdog {
public:
    // Nothing happens unless `notify` has a watchdog interval.
    Watchdog(io::Reactor& reactor, const SystemdNotify& notify,
             std::vector<dataplane::Worker*> workers, Logger log);
    ~Watchdog();
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    void tick();

    io::Reactor& reactor_;
    const SystemdNotify& notify_;
    std::vector<dataplane::Worker*> workers_;
    Logger log_;
    std::chrono::milliseconds interval_{0};
    // Per worker: the last probe posted, and (shared with the posted
    // commands, which may outlive this object) the last one that ran.
    std::vector<uint64_t> posted_;
    std::shared_ptr<std::vector<std::atomic<uint64_t>>> answered_;
    std::vector<bool> reported_stall_;
    io::Reactor::TimerId timer_ = 0;
};

}  // namespace vnet::control
