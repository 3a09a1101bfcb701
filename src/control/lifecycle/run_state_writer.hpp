// The run-time state file as the daemon keeps it ([daemon] state_file,
// run_state.hpp for the file itself): what vnetctl added is what the
// running config has and the config file as last read has not. It is
// rewritten whole after each change, and read once, at start-up, after the
// config's switches and ports exist: a state file can only add to what the
// config file says, never stop vnetd from starting, so each item that
// fails is logged and skipped.
#pragma once

#include <functional>
#include <string>

#include "common/log.hpp"
#include "control/config/config.hpp"

namespace vnet::control {

class RunStateWriter {
public:
    // `path` empty: no state file; every call is a no-op.
    RunStateWriter(Logger log, std::string path);

    // Rewrites the file with what `running` has and `file` has not. An
    // error is logged: the change is made, only a restart would lose it.
    void save(const Config& running, const Config& file) const;

    // How the items are re-created: the daemon's run-time add_switch and
    // add_port (a port with the peer it was added with).
    struct Adders {
        std::function<void(const SwitchConfig&)> add_switch;
        std::function<void(PortConfig, const std::string& peer)> add_port;
    };
    // Re-creates what the file lists, each item on its own; `running` is
    // the config the ports' settings are read against.
    void restore(const Config& running, const Adders& adders) const;

private:
    Logger log_;
    std::string path_;
};

}  // namespace vnet::control
