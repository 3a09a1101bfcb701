// vnet-pktgen as the guest of seed004 and rawlimit: txonly, 64 B UDP frames,
// burst 128 (the seed's pktgen burst), unpaced, on the load CPU, until
// stopped.
#pragma once

#include <string>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

ChildProcess start_pktgen_tx(BenchContext& ctx, const std::string& label,
                             const std::string& socket_path);

}  // namespace vnet::bench
