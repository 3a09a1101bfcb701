// What the option table's rows are written with, in option_table.cpp and
// in each port kind's own rows (control/ports/<kind>/<kind>_options.cpp):
// a value as text, and a kind's settings from the port a row sets or reads.
//
// Setters check that a value is well-formed and fits its field; what it
// means (ranges, combinations) is Config::validate's and the kind's
// validate, once, for the config file and the flags alike.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "control/config/option_table.hpp"
#include "control/config/value_parsers.hpp"

namespace vnet::control {

inline std::string text_or_none(const std::string& s) {
    return s.empty() ? "" : s;
}

template <class T>
std::string number(T v) {
    return std::to_string(v);
}

template <class T>
std::string optional_number(const std::optional<T>& v) {
    return v ? std::to_string(*v) : "";
}

// A kind's own key: set on a port of that kind, refused on another; read
// as the kind's default on another (what the docs show as the default).
template <class Kind>
Kind& settings_for(PortConfig* p, std::string_view key) {
    if (Kind* k = p->get<Kind>()) {
        return *k;
    }
    throw std::invalid_argument(std::string(key) + " is for " + std::string(Kind::kind) + " ports");
}
template <class Kind>
const Kind& settings_or_default(const PortConfig* p) {
    static const Kind defaults;
    const Kind* k = p == nullptr ? nullptr : p->get<Kind>();
    return k == nullptr ? defaults : *k;
}

// A kind's on/off key on a line or two.
#define VNET_KIND_BOOL(Kind, field, help)                                            \
    OptionSpec {                                                                     \
#field, OptionScope::port, port_type_of<Kind>(), "on|off", help, {}, false,        \
            [](Config&, PortConfig* p, std::string_view t) {                               \
                settings_for<Kind>(p, #field).field = parse_on_off(#field, t);             \
            },                                                                             \
            [](const Config&, const PortConfig* p) {                                       \
                return on_off(settings_or_default<Kind>(p).field);                         \
            } \
    }

}  // namespace vnet::control
