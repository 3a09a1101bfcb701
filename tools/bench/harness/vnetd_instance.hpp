// One vnetd process of a benchmark point: started pinned (the process on
// the CPU under test, its worker too with --cpu), inside a namespace so its
// taps are born there, with --log-level warn and a --stats-file whose JSON
// (rewritten every second, and at exit) stats() and stop() return.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "harness/process.hpp"

namespace vnet::bench {

class VnetdInstance {
public:
    // Throws MeasureError ("flag missing: --x") before starting anything
    // when vnetd does not know a flag of `args`. `log_level` info adds what
    // vnetd logs once per connection (e.g. which ring format was negotiated).
    VnetdInstance(BenchContext& ctx, const std::string& label, std::vector<std::string> args,
                  const std::string& netns, const std::string& log_level = "warn");

    // Waits for the vhost-user socket / a tap; throws MeasureError with the
    // last line of vnetd's log when it exits first.
    void wait_for_socket(const std::string& path, double timeout_s = 10);
    void wait_for_link(const std::string& ifname, double timeout_s = 10);
    // "" while running, else why it is not ("vnetd exited: <last log line>").
    std::string failure();
    // The stats JSON vnetd wrote last (null if none yet); its "seconds" say
    // when vnetd took the counters.
    nlohmann::json stats() const;
    // SIGTERM, then the final stats JSON (null if none was written).
    nlohmann::json stop();

    const std::string& log_path() const { return log_path_; }
    pid_t pid() const { return process_.pid(); }

private:
    std::string netns_;
    std::string log_path_;
    std::string stats_path_;
    ChildProcess process_;
};

// The vnetd counters worth a column or a JSON field: per port and direction
// packets, drops, mean burst, GRO frames and segments.
nlohmann::json vnetd_counters_summary(const nlohmann::json& stats);
// Packets a port received (rx), summed over its queues; 0 if absent.
uint64_t vnetd_port_rx_packets(const nlohmann::json& stats, const std::string& port);
// Sum over all ports of tx gro.segments / gro.frames.
uint64_t vnetd_gro_sum(const nlohmann::json& stats, const std::string& field);
// The busy time vnetd's workers count, summed (`vnetctl worker list`,
// busy_s: the rounds that moved packets, not the spin between them), from
// the vnetd serving `control_socket` (started with --control-socket).
// Throws MeasureError when vnetctl fails or says something else.
double vnetd_workers_busy_seconds(const BenchContext& ctx, const std::string& control_socket);

}  // namespace vnet::bench
