// A null port (drops what it is sent, sends nothing) has no keys of its own.
#pragma once

#include <span>
#include <string_view>

namespace vnet::control {

struct OptionSpec;

struct NullSettings {
    static constexpr std::string_view kind = "null";
    static std::span<const OptionSpec> options() { return {}; }
};

}  // namespace vnet::control
