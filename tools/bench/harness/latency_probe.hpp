// One-message-in-flight UDP latency, the way sockperf ping-pong measures it
// (half the round trip, in µs): either sockperf itself (a sockperf server
// answers) or udp_pingpong (anything that sends the datagram back with its
// addresses swapped answers, e.g. vnet-pktgen --reflect).
#pragma once

#include <cstdint>
#include <string>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

struct LatencyResult {
    double p50_us = 0;
    double p99_us = 0;
    double p999_us = 0;
    double mean_us = 0;
    uint64_t samples = 0;
};

struct LatencyRun {
    std::string netns;    // the client's namespace
    std::string address;  // where it sends
    int port = 11111;
    int message_bytes = 64;
    double seconds = 1;
    int cpu = 0;
    std::string label;  // for the log file
};

// A sockperf server on address:port in `netns` until destroyed.
class SockperfServer {
public:
    SockperfServer(BenchContext& ctx, const std::string& netns, const std::string& address,
                   int port, int cpu);
    ~SockperfServer();
    SockperfServer(const SockperfServer&) = delete;
    SockperfServer& operator=(const SockperfServer&) = delete;
    std::string failure();

private:
    ChildProcess process_;
};

// `sockperf ping-pong -m BYTES -t S`; throws MeasureError when it fails or
// prints no percentiles (e.g. no reply: "No messages were received").
LatencyResult run_sockperf_pingpong(BenchContext& ctx, const LatencyRun& run);
// udp_pingpong; throws MeasureError when nothing came back.
LatencyResult run_udp_pingpong(BenchContext& ctx, const LatencyRun& run);

}  // namespace vnet::bench
