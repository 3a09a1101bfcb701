// latency: UDP ping-pong p50 / p99 / p99.9, tap <-> tap against the kernel
// bridge and DPDK, and the VM path (tap -> back end -> reflecting guest ->
// tap) against DPDK testpmd (latency.cpp says how each is measured).
#pragma once

#include "harness/bench_context.hpp"
#include "report/results.hpp"

namespace vnet::bench {

Table run_latency(BenchContext& ctx);

}  // namespace vnet::bench
