// worker.list (vnetctl worker list): what each worker runs, by the one
// placement rule (PortTable::owner_of), and its busy and idle time as the
// metrics read them (relaxed counters: no command to the worker).
#include "control/daemon.hpp"

namespace vnet::control {

nlohmann::json Daemon::list_workers() {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < workers_.size(); ++i) {
        const dataplane::Worker& w = *workers_[i];
        nlohmann::json queue_pairs = nlohmann::json::array();
        for (PortEntry& p : ports_) {
            const std::string& name = p.port->name();
            for (uint16_t q = 0; q < p.port->queue_count(); ++q) {
                if (&ports_.owner_of(name, q) == &w) {
                    queue_pairs.push_back({{"port", name}, {"queue_pair", q}});
                }
            }
        }
        nlohmann::json switches = nlohmann::json::array();
        for (const SwitchEntry& s : switches_) {
            if (s.worker == &w) {
                switches.push_back(s.name);
            }
        }
        const uint64_t busy = w.busy_ns();
        const uint64_t idle = w.idle_ns();
        out.push_back(
            {{"worker", i},
             {"cpu", w.options().cpu ? nlohmann::json(*w.options().cpu) : nlohmann::json()},
             {"mode", dataplane::to_string(w.options().mode)},
             {"queue_pairs", std::move(queue_pairs)},
             {"switches", std::move(switches)},
             {"busy_s", static_cast<double>(busy) / 1e9},
             {"idle_s", static_cast<double>(idle) / 1e9},
             {"busy_share", busy + idle == 0
                                ? 0.0
                                : static_cast<double>(busy) / static_cast<double>(busy + idle)},
             {"rounds", w.rounds()},
             {"sleeps", w.sleeps()}});
    }
    return out;
}

}  // namespace vnet::control
