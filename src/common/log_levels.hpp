// The log levels by name, for what sets them at run time (vnetctl log
// level) or from the config (log_level): set_log_level (log.hpp) takes only
// these and throws std::invalid_argument naming them for anything else,
// since spdlog would read an unknown word as "off".
#pragma once

#include <string>
#include <string_view>

namespace vnet {

inline constexpr const char* kLogLevels = "trace, debug, info, warn, error, critical, off";
bool is_log_level(std::string_view level);
// "WHAT must be one of trace, ..., off, not 'LEVEL'": how a level that is
// none of them is refused, everywhere.
std::string log_level_refusal(std::string_view what, std::string_view level);

// The level set_log_level set last ("info" at start), as it was given.
std::string log_level();

}  // namespace vnet
