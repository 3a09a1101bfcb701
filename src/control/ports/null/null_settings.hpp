// A null port (drops what it is sent, sends nothing) has no keys of its own.
#pragma once

#include <string_view>

namespace vnet::control {

struct NullSettings {
    static constexpr std::string_view kind = "null";
};

}  // namespace vnet::control
