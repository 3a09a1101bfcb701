// Stats: per port and direction, the counters of packet::QueueCounters as a
// human table (log / final report) and as JSON (stats file, benchmarks,
// tests). Reads relaxed atomics: safe while workers run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "control/config/config.hpp"
#include "ports/port.hpp"

namespace vnet::control {

// `kind`: the port's factory kind name. Besides the counters, each section
// of Port::describe becomes an object of its own ("tap", "xdp").
nlohmann::json port_stats_json(ports::Port& port, std::string_view kind);
// The datapath knobs in effect, under their config-key names, so that every
// benchmark row can show what it ran with.
// "key=value ..." of every datapath option (option_table.hpp's datapath_json).
std::string datapath_summary(const Config& config);
// A table: one line per port and direction, with pps/Gbit/s over `seconds`.
std::string stats_table(const std::vector<ports::Port*>& ports, double seconds);

}  // namespace vnet::control
