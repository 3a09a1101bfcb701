// mac.flush (vnetctl mac flush): the MAC table belongs to the switch's
// worker, so it is flushed there (run_sync), between rounds, as switch.list
// reads it; the frames that follow flood until their MACs are learned again.
#include "control/daemon.hpp"

namespace vnet::control {

nlohmann::json Daemon::flush_macs(const std::optional<std::string>& switch_name,
                                  const std::optional<std::string>& port) {
    const ports::Port* only_port = nullptr;
    std::optional<std::string> on_switch = switch_name;
    if (port) {
        const PortConfig* pc = config_.find_port(*port);
        only_port = ports_.port_named(*port);
        if (pc == nullptr || only_port == nullptr) {
            throw std::invalid_argument("no port named '" + *port + "'");
        }
        if (pc->switch_name.empty()) {
            throw std::invalid_argument("port '" + *port + "' is on no switch");
        }
        if (switch_name && *switch_name != pc->switch_name) {
            throw std::invalid_argument("port '" + *port + "' is on switch '" + pc->switch_name +
                                        "', not '" + *switch_name + "'");
        }
        on_switch = pc->switch_name;
    }
    if (on_switch && switches_.switch_named(*on_switch) == nullptr) {
        throw std::invalid_argument("no switch named '" + *on_switch + "'");
    }
    uint64_t flushed = 0;
    for (SwitchEntry& s : switches_) {
        if (!on_switch || *on_switch == s.name) {
            s.worker->run_sync([&] { flushed += s.datapath->forget_macs(only_port); });
        }
    }
    return nlohmann::json{{"flushed", flushed}};
}

}  // namespace vnet::control
