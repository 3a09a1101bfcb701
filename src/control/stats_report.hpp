// Stats: per port and direction, the counters of ports::QueueCounters as a
// human table (log / final report) and as JSON (stats file, benchmarks,
// tests). Reads relaxed atomics: safe while workers run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ports/port.hpp"

namespace vnet::control {

nlohmann::json port_stats_json(ports::Port& port);
// A table: one line per port and direction, with pps/Gbit/s over `seconds`.
std::string stats_table(const std::vector<ports::Port*>& ports, double seconds);

}  // namespace vnet::control
