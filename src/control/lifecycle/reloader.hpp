// Reload (SIGHUP, vnetctl reload): re-reads the config file, plans the
// difference to the file as last read (config_diff.hpp) and applies it
// through the port and switch tables' run-time calls, all or nothing: a plan with a
// refusal changes nothing, and a step that throws (a socket's directory
// gone, a tap name taken meanwhile: what no plan can see) undoes the steps
// before it, in reverse.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "control/config/config.hpp"
#include "control/ports/port_table.hpp"
#include "control/switches/switch_table.hpp"

namespace vnet::control {

class Reloader {
public:
    // `reread` reads the config file again as it was read at start-up (the
    // file, then the command line's flags over it); none: vnetd was started
    // with flags only and refuses to reload. `file`: the config as read then.
    // What a reload changes: the daemon's, all outliving it.
    struct Wiring {
        const Config& running;  // the running config, as the tables keep it
        PortTable& ports;
        SwitchTable& switches;
        // One of kRunTimeOptions (config_diff.hpp), as the option table's text.
        std::function<void(const std::string& key, const std::string& text)> set_option;
    };
    Reloader(Logger log, std::function<Config()> reread, Config file, Wiring wiring);

    bool can_reread() const { return static_cast<bool>(reread_); }
    // The config file as last read (ports added with vnetctl are not in it).
    const Config& file_config() const { return file_; }

    // Applies what changed in the file to the tables: what it did, as
    // JSON. Throws std::invalid_argument with every reason when it refuses,
    // or with the failure and what rolling back could not restore.
    nlohmann::json reload();

private:
    // What a reload did so far, to undo it if a later step fails.
    struct Undo {
        std::vector<std::pair<PortConfig, std::string>> removed_ports;  // config, peer
        std::vector<SwitchConfig> removed_switches;
        std::vector<std::string> added_switches;
        std::vector<std::string> added_ports;
    };
    std::string roll_back(const Undo& undo) const;

    Logger log_;
    std::function<Config()> reread_;
    Config file_;
    Wiring w_;
};

}  // namespace vnet::control
