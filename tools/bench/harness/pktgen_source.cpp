#include "harness/pktgen_source.hpp"

namespace vnet::bench {

ChildProcess start_pktgen_tx(BenchContext& ctx, const std::string& label,
                             const std::string& socket_path) {
    ProcessSpec spec;
    spec.name = "vnet-pktgen " + label;
    spec.argv = {ctx.tools().pktgen,
                 "--socket-path",
                 socket_path,
                 "--tx",
                 "--burst",
                 "128",
                 "--size",
                 "64",
                 "--stats-interval",
                 "0",
                 "--connect-timeout",
                 "15"};
    spec.cpu = ctx.load_cpu();
    spec.output_path = ctx.log_path("pktgen-" + label + ".log");
    return ChildProcess(spec);
}

}  // namespace vnet::bench
