// vnetctl's tables of vnetd's answers (port.list, switch.list, mac.list,
// worker.list, stats): pure formatting of the JSON, one row per item.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vnet::vnetctl {

// A JSON value as a table cell: a string as it is, null as "-", else JSON.
std::string text_of(const nlohmann::json& v);

void print_ports(const nlohmann::json& ports);
void print_switches(const nlohmann::json& switches);
void print_macs(const nlohmann::json& macs);
// worker.list: one row per worker; its queue pairs as PORT:Q, busy as a
// percentage of its time since start.
void print_workers(const nlohmann::json& workers);
// One line per port, queue and direction that moved anything; with a
// previous sample (`before`), the rates over `seconds` too.
void print_stats(const nlohmann::json& now, const nlohmann::json* before, double seconds);

}  // namespace vnet::vnetctl
