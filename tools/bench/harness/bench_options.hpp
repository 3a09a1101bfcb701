// What a vnet-bench run was asked for (command_line.hpp parses it).
#pragma once

#include <string>
#include <vector>

namespace vnet::bench {

enum class RunMode { quick, full };

struct BenchOptions {
    RunMode mode = RunMode::quick;
    std::vector<std::string> only;  // experiment ids; empty: all
    std::string json_path;
    std::string charts_dir;
    std::string build_dir;  // empty: <build> of <build>/tools/bench/vnet-bench
    std::string log_dir;    // empty: /tmp/vnet-bench-<pid>
    int repeat = 0;         // 0: the mode's default (quick 1, full 3)
    double seconds = 0;     // 0: the mode's default (quick 1, full 5)
    int dut_cpu = -1;       // vnetd / the forwarder under test; -1: the last CPU
    int load_cpu = -1;      // traffic source and sink; -1: CPU 0
    bool verbose = false;
};

}  // namespace vnet::bench
