// iperf3 TCP runs between two namespaces: one server (kept for a whole
// experiment) and one client run per point, both on the load CPU; the
// result is the receiver's rate from the client's JSON (-J).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

class IperfServer {
public:
    // Throws MeasureError when iperf3 is missing or does not listen.
    IperfServer(BenchContext& ctx, const std::string& netns, int port);
    int port() const { return port_; }

private:
    int port_;
    ChildProcess process_;
};

struct IperfRun {
    std::string netns;  // the client's
    std::string server_address;
    int port = 5201;
    double seconds = 1;
    int omit_seconds = 0;  // iperf3 -O: warm-up not counted
    std::string length;    // -l (write size); empty: iperf3's default
    int parallel = 1;      // -P
};

struct IperfResult {
    double gbps = 0;  // receiver side, sum over streams
    uint64_t retransmits = 0;
};

// Throws MeasureError with iperf3's error message.
IperfResult run_iperf_client(BenchContext& ctx, const IperfRun& run, const std::string& label);

}  // namespace vnet::bench
