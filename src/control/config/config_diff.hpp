// What re-reading the config file (SIGHUP, vnetctl reload) changes: the
// difference between the file as vnetd last read it and as it reads now,
// as a plan the daemon applies to its running state, or refuses whole.
//
// The file is the boot state: ports added with vnetctl are not in either
// version, so a reload leaves them alone. What can change at run time:
// ports (added or removed, with their cross-connect), switches (added or
// removed) and the options that are safe to change under traffic
// (kRunTimeOptions). Anything else — a port or a switch whose keys
// changed, a cross-connect between ports that stay, a datapath option the
// workers were built with — is a refusal naming the key; one refusal
// refuses the whole plan, so a reload is all or nothing.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "control/config/config.hpp"

namespace vnet::control {

// Options a reload may change on a running vnetd (daemon or datapath scope).
inline constexpr std::string_view kRunTimeOptions[] = {"busy_poll_us", "log_level"};

struct ConfigPlan {
    std::vector<std::string> remove;                           // port names, in file order
    std::vector<std::pair<PortConfig, std::string>> add;       // port, peer ("" for none), in order
    std::vector<std::pair<std::string, std::string>> options;  // key, new value (text)
    // Switches gone from the file (removed after `remove`, so their ports
    // have left them) and new ones (added before `add`, whose ports may be
    // on them), in file order.
    std::vector<std::string> remove_switches;
    std::vector<SwitchConfig> add_switches;
    std::vector<std::string> refusals;  // why not, one line each

    bool empty() const {
        return remove.empty() && add.empty() && options.empty() && remove_switches.empty() &&
               add_switches.empty();
    }
};

// `before`: the file as last read; `after`: as read now (both validated).
// Every port to add is listed after the port it is cross-connected to, if
// that one is added too, so applying `add` in order always finds the peer.
ConfigPlan plan_reload(const Config& before, const Config& after);

}  // namespace vnet::control
