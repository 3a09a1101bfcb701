#include "control/config/port_type.hpp"

#include <array>
#include <utility>

namespace vnet::control {

namespace {

template <size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> kind_names(std::index_sequence<I...>) {
    return {std::variant_alternative_t<I, PortSettings>::kind...};
}
constexpr auto kKindNames =
    kind_names(std::make_index_sequence<std::variant_size_v<PortSettings>>());

template <size_t... I>
PortSettings settings_at(size_t index, std::index_sequence<I...>) {
    PortSettings out;
    ((index == I ? void(out.emplace<I>()) : void()), ...);
    return out;
}

// PortType names the alternatives of PortSettings, in their order.
static_assert(std::is_same_v<std::variant_alternative_t<size_t(PortType::vhost_user), PortSettings>,
                             VhostUserSettings>);
static_assert(
    std::is_same_v<std::variant_alternative_t<size_t(PortType::tap), PortSettings>, TapSettings>);
static_assert(
    std::is_same_v<std::variant_alternative_t<size_t(PortType::null), PortSettings>, NullSettings>);
static_assert(std::is_same_v<std::variant_alternative_t<size_t(PortType::vxlan), PortSettings>,
                             VxlanSettings>);

}  // namespace

const char* to_string(PortType t) {
    const auto i = static_cast<size_t>(t);
    return i < kKindNames.size() ? kKindNames[i].data() : "unknown";
}

std::optional<PortType> parse_port_type(const std::string& s) {
    for (size_t i = 0; i < kKindNames.size(); ++i) {
        if (kKindNames[i] == s) {
            return static_cast<PortType>(i);
        }
    }
    return std::nullopt;
}

std::string port_type_names() {
    std::string out;
    for (size_t i = 0; i < kKindNames.size(); ++i) {
        if (i > 0) {
            out += i + 1 == kKindNames.size() ? " or " : ", ";
        }
        out += kKindNames[i];
    }
    return out;
}

PortSettings default_settings(PortType t) {
    return settings_at(static_cast<size_t>(t),
                       std::make_index_sequence<std::variant_size_v<PortSettings>>());
}

}  // namespace vnet::control
