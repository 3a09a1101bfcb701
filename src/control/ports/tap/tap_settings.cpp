#include "control/ports/tap/tap_settings.hpp"

#include <stdexcept>

#include "control/config/config.hpp"
#include "ports/tap/xdp_options.hpp"

namespace vnet::control {

std::string tap_device_name(const PortConfig& port) {
    const TapSettings* tap = port.get<TapSettings>();
    return tap == nullptr || tap->ifname.empty() ? port.name : tap->ifname;
}

void TapSettings::validate(const PortConfig& port, const Config&) const {
    const std::string where = "port '" + port.name + "': ";
    if (ifname.size() > 15) {
        throw std::invalid_argument(where + "tap name longer than 15 characters");
    }
    // The xdp keys (docs/USAGE.md "XDP on the tap").
    if (!ports::parse_xdp_mode(xdp_mode)) {
        throw std::invalid_argument(where + "xdp_mode must be auto, native or generic, not '" +
                                    xdp_mode + "'");
    }
    if (xdp.empty()) {
        if (!xdp_redirect.empty()) {
            throw std::invalid_argument(where + "xdp_redirect needs xdp (the program to attach)");
        }
        if (xdp_mode != "auto") {
            throw std::invalid_argument(where + "xdp_mode needs xdp (the program to attach)");
        }
        return;
    }
    const std::string file = ports::split_xdp_spec(xdp).file;
    if (file.empty()) {
        throw std::invalid_argument(where + "xdp must be FILE[:SECTION], not '" + xdp + "'");
    }
    if (file.find('/') != std::string::npos && file.front() != '/') {
        throw std::invalid_argument(where + "xdp FILE must be an absolute path or the bare name " +
                                    "of a shipped program, not '" + file + "'");
    }
    if (xdp_redirect.size() > 15) {
        throw std::invalid_argument(where + "xdp_redirect '" + xdp_redirect +
                                    "' is longer than 15 characters");
    }
    const std::string own = tap_device_name(port);
    if (xdp_redirect == own) {
        throw std::invalid_argument(where + "xdp_redirect names the port's own tap '" + own +
                                    "' (a program sends frames back with XDP_TX)");
    }
}

}  // namespace vnet::control
