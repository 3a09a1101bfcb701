// The run-time state file ([daemon] state_file, docs/USAGE.md "Run-time
// state"): the switches and ports vnetctl (or the CNI plugin) added, which
// the config file does not know, so that a vnetd started again after a
// crash or a kill re-creates them and the guests' front ends find their
// sockets again. Each item is its name, type and settings as the option
// table's text (what a flag would say): written with OptionSpec::get, read
// back with port_from_settings / switch_from_settings, the parsers vnetctl's
// additions go through, so there is no second serializer to keep in step.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/config/config.hpp"

namespace vnet::control {

using Settings = std::vector<std::pair<std::string, std::string>>;

struct RunStateSwitch {
    std::string name;
    Settings settings;  // the [[switch]] keys that differ from their defaults
};

struct RunStatePort {
    std::string name;
    std::string type;   // "vhost-user", "tap", "null", "vxlan"
    std::string peer;   // the cross-connect it was added with; empty: none
    Settings settings;  // the [[port]] keys that differ from a new port's
    bool operator==(const RunStatePort&) const = default;
};

struct RunState {
    std::vector<RunStateSwitch> switches;  // in the order they were made
    std::vector<RunStatePort> ports;       // in the order they were added
};

// An item from its config: every key of its scope (and, for a port, its
// type) whose text is not that of a new item with no settings.
RunStateSwitch run_state_switch(const SwitchConfig& config);
RunStatePort run_state_port(const PortConfig& config, const std::string& peer);

// The file's text (JSON, one version key) and back. parse_run_state throws
// std::invalid_argument saying what is wrong with the text.
std::string run_state_text(const RunState& state);
RunState parse_run_state(std::string_view text);

// Replaces `path` whole, never leaving half a file: a temporary beside it
// written and fsynced, renamed over it, then the directory fsynced (the
// rename itself must survive a crash). Throws std::system_error naming the
// step and the path.
void write_run_state(const std::string& path, const RunState& state);
// nullopt when there is no file (the first start). Throws
// std::invalid_argument (a file that does not parse) or std::system_error
// (one that cannot be read).
std::optional<RunState> read_run_state(const std::string& path);
// Moves a file that does not parse to PATH.bad, for a person to look at,
// so that it neither stops this start nor the next: returns that path.
std::string set_aside_run_state(const std::string& path);

}  // namespace vnet::control
