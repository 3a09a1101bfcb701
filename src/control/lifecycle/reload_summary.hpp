// A reload's answer (Reloader::reload) in words, for the log line of a
// SIGHUP or a `vnetctl reload`: "added port vm3; removed port vm2; options
// stats_interval_s=5", or "nothing changed".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::control {

std::string reload_summary(const nlohmann::json& done);

}  // namespace vnet::control
