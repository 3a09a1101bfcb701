// vnet-bench's command line.
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
    std::string build_dir;  // empty: the parent of the directory holding this binary
    std::string log_dir;    // empty: /tmp/vnet-bench-<pid>
    int repeat = 0;         // 0: the mode's default (quick 1, full 3)
    double seconds = 0;     // 0: the mode's default (quick 1, full 5)
    int dut_cpu = -1;       // vnetd / the forwarder under test; -1: the last CPU
    int load_cpu = -1;      // traffic source and sink; -1: CPU 0
    bool verbose = false;
};

// Exits (with CLI11's message) on --help or a bad option.
BenchOptions parse_options(int argc, char** argv);

}  // namespace vnet::bench
