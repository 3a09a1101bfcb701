// Stats: per port and direction, the counters of packet::QueueCounters as a
// one-line summary (log / final report) and as JSON (stats file, benchmarks,
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
// One line (a log line is one event: journald and grep see it whole):
// "PORT/QUEUE DIR N pkts X Mpps Y Gbit/s burst B drops D" per port, queue
// pair that counted something (and queue pair 0) and direction, "; "
// between them; pps and Gbit/s over `seconds`.
std::string stats_summary(const std::vector<ports::Port*>& ports, double seconds);

}  // namespace vnet::control
