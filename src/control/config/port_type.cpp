#include "control/config/port_type.hpp"

namespace vnet::control {

const char* to_string(PortType t) {
    switch (t) {
        case PortType::vhost_user:
            return "vhost-user";
        case PortType::tap:
            return "tap";
        case PortType::null:
            return "null";
        case PortType::vxlan:
            return "vxlan";
    }
    return "unknown";
}

std::optional<PortType> parse_port_type(const std::string& s) {
    if (s == "vhost-user")
        return PortType::vhost_user;
    if (s == "tap")
        return PortType::tap;
    if (s == "null")
        return PortType::null;
    if (s == "vxlan")
        return PortType::vxlan;
    return std::nullopt;
}

}  // namespace vnet::control
