// A DPDK process's counters, read live through its telemetry socket
// (<runtime dir>/dpdk_telemetry.v2, SOCK_SEQPACKET: one JSON reply per
// command; DPDK's doc "Telemetry Library"). A read is one round trip of
// microseconds, so a measurement window's edges are sharp, as with
// LinkStatsReader for a tap.
#pragma once

#include <cstdint>
#include <string>

namespace vnet::bench {

class DpdkTelemetry {
public:
    explicit DpdkTelemetry(std::string runtime_dir) : runtime_dir_(std::move(runtime_dir)) {}
    ~DpdkTelemetry();
    DpdkTelemetry(const DpdkTelemetry&) = delete;
    DpdkTelemetry& operator=(const DpdkTelemetry&) = delete;

    // "/ethdev/stats,<port>" ipackets: what the port received. Connects on
    // first use. Throws MeasureError when the socket is not there (yet) or
    // the reply is not what DPDK sends.
    uint64_t rx_packets(int port);

private:
    void connect();

    std::string runtime_dir_;
    int fd_ = -1;
};

}  // namespace vnet::bench
