// Reload (SIGHUP, vnetctl reload): re-reads the config file, plans the
// difference to the file as last read (config_diff.hpp) and applies it
// through the running vnetd's run-time calls, all or nothing: a plan with a
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

namespace vnet::control {

// The running vnetd as a reload changes it: the calls vnetctl's port and
// switch methods make, and the options a reload may change.
class ReloadTarget {
public:
    virtual ~ReloadTarget() = default;
    virtual const Config& running_config() const = 0;
    virtual bool has_port(const std::string& name) = 0;
    virtual bool has_switch(const std::string& name) = 0;
    // Why the switch cannot go now (the ports on it, other than
    // `leaving`), or "" if it can.
    virtual std::string switch_removal_refusal(const std::string& name,
                                               const std::vector<std::string>& leaving) const = 0;
    virtual void add_port(PortConfig port, const std::string& peer) = 0;
    virtual void remove_port(const std::string& name) = 0;
    virtual void add_switch(const SwitchConfig& config) = 0;
    virtual void remove_switch(const std::string& name) = 0;
    // One of kRunTimeOptions (config_diff.hpp), as the option table's text.
    virtual void set_run_time_option(const std::string& key, const std::string& text) = 0;
};

class Reloader {
public:
    // `reread` reads the config file again as it was read at start-up (the
    // file, then the command line's flags over it); none: vnetd was started
    // with flags only and refuses to reload. `file`: the config as read then.
    Reloader(Logger log, std::function<Config()> reread, Config file);

    bool can_reread() const { return static_cast<bool>(reread_); }
    // The config file as last read (ports added with vnetctl are not in it).
    const Config& file_config() const { return file_; }

    // Applies what changed in the file to `target`: what it did, as JSON.
    // Throws std::invalid_argument with every reason when it refuses, or
    // with the failure and what rolling back could not restore.
    nlohmann::json reload(ReloadTarget& target);

private:
    // What a reload did so far, to undo it if a later step fails.
    struct Undo {
        std::vector<std::pair<PortConfig, std::string>> removed_ports;  // config, peer
        std::vector<SwitchConfig> removed_switches;
        std::vector<std::string> added_switches;
        std::vector<std::string> added_ports;
    };
    std::string roll_back(ReloadTarget& target, const Undo& undo) const;

    Logger log_;
    std::function<Config()> reread_;
    Config file_;
};

}  // namespace vnet::control
