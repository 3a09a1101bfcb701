// vnet-bench's command line. It lives beside main(), not in harness/, since
// it lists the experiments (--only) and the harness must not know them.
#pragma once

#include "harness/bench_options.hpp"

namespace vnet::bench {

// Exits (with CLI11's message) on --help or a bad option.
BenchOptions parse_options(int argc, char** argv);

}  // namespace vnet::bench
