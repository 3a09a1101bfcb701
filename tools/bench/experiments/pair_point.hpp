// One iperf3 point through the tap <-> forwarder <-> tap topology: start
// the forwarder (which adopts the links into the two namespaces), run the
// client in b against the server in a, stop the forwarder.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/iperf.hpp"
#include "harness/tap_pair.hpp"

namespace vnet::bench {

struct PairPoint {
    std::string label;
    std::function<std::unique_ptr<PairForwarder>()> start;
    bool sender_tso_off = false;
    std::string length;  // iperf3 -l
    int parallel = 1;    // iperf3 -P
};

// Gbit/s; `extra` gets the forwarder's report (vnetd counters) and the
// iperf3 retransmits. Throws MeasureError.
double run_pair_point(BenchContext& ctx, TapPairTopology& topo, const IperfServer& server,
                      const PairPoint& point, nlohmann::json& extra);

}  // namespace vnet::bench
