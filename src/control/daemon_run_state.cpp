// The run-time state file (run_state.hpp, docs/USAGE.md "Run-time state"):
// what vnetctl added is what the running config has and the config file as
// last read has not. It is rewritten whole after each change, and read once,
// in the constructor, after the config's switches and ports exist: a state
// file can only add to what the config file says, never stop vnetd from
// starting, so each item that fails is logged and skipped.
#include <algorithm>

#include "control/daemon.hpp"
#include "control/lifecycle/run_state.hpp"

namespace vnet::control {

void Daemon::save_run_state() {
    // After an upgrade in place the file is the successor's.
    if (config_.state_file.empty() || handed_over_) {
        return;
    }
    RunState state;
    for (const SwitchConfig& sc : config_.switches) {
        if (!std::ranges::any_of(file_config_.switches,
                                 [&](const SwitchConfig& f) { return f.name == sc.name; })) {
            state.switches.push_back(run_state_switch(sc));
        }
    }
    for (const PortConfig& pc : config_.ports) {
        if (file_config_.find_port(pc.name) != nullptr) {
            continue;
        }
        // port.add makes {peer, new port}: the port that came second names
        // the first, which is restored before it.
        std::string peer;
        for (const auto& [first, second] : config_.connections) {
            if (second == pc.name) {
                peer = first;
            }
        }
        state.ports.push_back(run_state_port(pc, peer));
    }
    try {
        write_run_state(config_.state_file, state);
    } catch (const std::exception& e) {
        // The change is made: only a restart would lose it.
        log_->error("state file {} not written: {}", config_.state_file, e.what());
    }
}

void Daemon::restore_run_state() {
    const std::string& path = config_.state_file;
    if (path.empty()) {
        return;
    }
    std::optional<RunState> state;
    try {
        state = read_run_state(path);
    } catch (const std::invalid_argument& e) {
        std::string aside;
        try {
            aside = "set aside as " + set_aside_run_state(path);
        } catch (const std::exception& rename_error) {
            aside = rename_error.what();
        }
        log_->error("state file {} does not parse ({}): {}; starting without it", path, e.what(),
                    aside);
        return;
    } catch (const std::exception& e) {
        log_->error("state file {}: {}; starting without it", path, e.what());
        return;
    }
    if (!state) {
        log_->info("state file {}: none yet", path);
        return;
    }
    size_t restored = 0;
    for (const RunStateSwitch& s : state->switches) {
        try {
            add_switch(switch_from_settings(s.name, s.settings));
            log_->info("state file: switch {} re-created", s.name);
            ++restored;
        } catch (const std::exception& e) {
            log_->error("state file: switch {} not re-created: {}", s.name, e.what());
        }
    }
    for (const RunStatePort& p : state->ports) {
        try {
            Config scratch = config_;  // option rows may write daemon-wide state: not ours
            add_port(port_from_settings(p.name, p.type, p.settings, scratch), p.peer);
            log_->info("state file: port {} re-created ({}{}{})", p.name, p.type,
                       p.peer.empty() ? "" : ", cross-connected to ", p.peer);
            ++restored;
        } catch (const std::exception& e) {
            log_->error("state file: port {} not re-created: {}", p.name, e.what());
        }
    }
    // Not rewritten here: an item that failed (a tap name taken for now)
    // is tried again at the next start, until a change rewrites the file.
    log_->info("state file {}: {} of {} item(s) re-created", path, restored,
               state->switches.size() + state->ports.size());
}

}  // namespace vnet::control
