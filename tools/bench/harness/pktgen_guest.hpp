// vnet-pktgen as one guest of a VM <-> VM experiment: a sender (--tx) or a
// receiver (--rx) on a back end's vhost-user socket, pinned, optionally at
// idle priority (SCHED_IDLE, so that it never starves the other guest on
// its CPU), printing its totals every 0.1 s. sample() reads the latest
// totals with pktgen's own time; finish() stops it and returns its report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {

struct PktgenGuestSpec {
    std::string label;
    std::string socket_path;
    bool transmit = true;  // --tx, else --rx
    bool server = false;   // --server: listen, the back end connects
    int cpu = 0;
    bool idle_priority = false;  // SCHED_IDLE
    uint32_t frame_bytes = 64;
    bool gso = false;  // TCP/IPv4 GSO super-frames of frame_bytes (--gso)
    std::string src_mac = "02:00:00:00:00:01";
    std::string dst_mac = "02:00:00:00:00:02";
    uint32_t src_mac_count = 1;
    uint64_t rate_pps = 0;    // 0: unpaced
    uint32_t queue_size = 0;  // --queue-size; 0: pktgen's default (256)
    std::vector<std::string> extra_args;
};

// What one guest counted, from its periodic line.
struct GuestTotals {
    uint64_t packets = 0;
    uint64_t bytes = 0;
    double at_s = 0;  // pktgen's clock since it started
};

class PktgenGuest {
public:
    PktgenGuest(BenchContext& ctx, const PktgenGuestSpec& spec);
    ~PktgenGuest();
    PktgenGuest(const PktgenGuest&) = delete;
    PktgenGuest& operator=(const PktgenGuest&) = delete;

    // Waits for "link up"; throws MeasureError with its last line.
    void wait_for_link(double timeout_s = 20);
    GuestTotals totals() const;
    CounterSample packet_sample() const;
    CounterSample byte_sample() const;
    // "" while running, else why not.
    std::string failure();
    // SIGINT (a receiver stops at once, a sender drains), then the final
    // report (--json line), or null when it printed none.
    nlohmann::json finish();
    pid_t pid() const { return process_.pid(); }
    const std::string& log_path() const { return log_path_; }

private:
    std::string label_;
    std::string log_path_;
    std::string out_path_;
    ChildProcess process_;
};

// Sends one broadcast frame from `mac` on `socket_path` and disconnects:
// a learning switch then knows where `mac` lives (a receiver never sends).
void announce_mac(BenchContext& ctx, const std::string& socket_path, const std::string& mac);

}  // namespace vnet::bench
