// vnet-bench's log: one spdlog logger with two sinks. Every command the tool
// runs, where (netns, CPU) and with which output file goes to the log file
// in the run's log directory; the console shows progress, and the commands
// too with --verbose.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

namespace vnet::bench {

void init_bench_log(const std::string& file, bool verbose);
spdlog::logger& blog();

// "ip netns exec ns1 vnetd --tap x" style, with shell-safe quoting.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace vnet::bench
