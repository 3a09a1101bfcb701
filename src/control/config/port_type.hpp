// The kinds of port a config names (`type = "vhost-user"` and the rest):
// each kind's own keys are a struct in its folder in control/ports/, and a
// port's settings hold one of them. The alternative a port holds is its
// type, so the two lists below are in the same order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "control/ports/null/null_settings.hpp"
#include "control/ports/tap/tap_settings.hpp"
#include "control/ports/vhost_user/vhost_user_settings.hpp"
#include "control/ports/vxlan/vxlan_settings.hpp"

namespace vnet::control {

enum class PortType : uint8_t { vhost_user, tap, null, vxlan };
using PortSettings = std::variant<VhostUserSettings, TapSettings, NullSettings, VxlanSettings>;

// The PortType of a kind's settings struct: its place in PortSettings.
template <class Kind, size_t I = 0>
constexpr PortType port_type_of() {
    if constexpr (std::is_same_v<Kind, std::variant_alternative_t<I, PortSettings>>) {
        return static_cast<PortType>(I);
    } else {
        return port_type_of<Kind, I + 1>();
    }
}

// The kind's name as the config writes it ("vhost-user").
const char* to_string(PortType t);
std::optional<PortType> parse_port_type(const std::string& s);
// Every kind's name, for a message: "vhost-user, tap, null or vxlan".
std::string port_type_names();
// A kind's settings with every key at its default.
PortSettings default_settings(PortType t);

}  // namespace vnet::control
