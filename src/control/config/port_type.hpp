// The kinds of port a config names: `type = "vhost-user"` and the rest.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vnet::control {

enum class PortType : uint8_t { vhost_user, tap, null, vxlan };

const char* to_string(PortType t);
std::optional<PortType> parse_port_type(const std::string& s);

}  // namespace vnet::control
