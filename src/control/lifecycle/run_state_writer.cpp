#include "control/lifecycle/run_state_writer.hpp"

#include <algorithm>

#include "control/lifecycle/run_state.hpp"

namespace vnet::control {

RunStateWriter::RunStateWriter(Logger log, std::string path)
    : log_(std::move(log)), path_(std::move(path)) {}

void RunStateWriter::save(const Config& running, const Config& file) const {
    if (path_.empty()) {
        return;
    }
    RunState state;
    for (const SwitchConfig& sc : running.switches) {
        if (!std::ranges::any_of(file.switches,
                                 [&](const SwitchConfig& f) { return f.name == sc.name; })) {
            state.switches.push_back(run_state_switch(sc));
        }
    }
    for (const PortConfig& pc : running.ports) {
        if (file.find_port(pc.name) != nullptr) {
            continue;
        }
        // port.add makes {peer, new port}: the port that came second names
        // the first, which is restored before it.
        std::string peer;
        for (const auto& [first, second] : running.connections) {
            if (second == pc.name) {
                peer = first;
            }
        }
        state.ports.push_back(run_state_port(pc, peer));
    }
    try {
        write_run_state(path_, state);
    } catch (const std::exception& e) {
        log_->error("state file {} not written: {}", path_, e.what());
    }
}

void RunStateWriter::restore(const Config& running, const Adders& adders) const {
    const std::string& path = path_;
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
            adders.add_switch(switch_from_settings(s.name, s.settings));
            log_->info("state file: switch {} re-created", s.name);
            ++restored;
        } catch (const std::exception& e) {
            log_->error("state file: switch {} not re-created: {}", s.name, e.what());
        }
    }
    for (const RunStatePort& p : state->ports) {
        try {
            Config scratch = running;  // option rows may write daemon-wide state: not ours
            adders.add_port(port_from_settings(p.name, p.type, p.settings, scratch), p.peer);
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
