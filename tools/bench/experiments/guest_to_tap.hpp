// The guest -> back end -> tap path of seed004 and rawlimit: vnet-pktgen
// (64 B, burst 128) feeds vnetd or DPDK testpmd (net_vhost io net_tap) over
// vhost-user; the rate is what the tap counts (rx_packets + rx_dropped) in
// its namespace, after warm-up.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "harness/link_stats.hpp"

namespace vnet::bench {

// Mpps; `extra` gets vnetd's counters. Throws MeasureError.
double pktgen_vnetd_to_tap(BenchContext& ctx, const std::string& netns, const std::string& label,
                           const std::vector<std::string>& vnetd_args, nlohmann::json& extra);
double pktgen_dpdk_to_tap(BenchContext& ctx, const std::string& netns, const std::string& label,
                          nlohmann::json& extra);

// Counts a tap's rx_packets + rx_dropped in a namespace.
class TapRxCounter {
public:
    TapRxCounter(const std::string& netns, std::string ifname)
        : reader_(netns), ifname_(std::move(ifname)) {}
    // Throws MeasureError when the tap is gone.
    uint64_t operator()();

private:
    LinkStatsReader reader_;
    std::string ifname_;
};

}  // namespace vnet::bench
