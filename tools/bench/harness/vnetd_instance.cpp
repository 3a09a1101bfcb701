#include "harness/vnetd_instance.hpp"

#include <chrono>
#include <fstream>

#include "harness/interrupt.hpp"
#include "harness/netns.hpp"
#include "harness/rate_meter.hpp"
#include "harness/socket_wait.hpp"

namespace vnet::bench {

VnetdInstance::VnetdInstance(BenchContext& ctx, const std::string& label,
                             std::vector<std::string> args, const std::string& netns,
                             const std::string& log_level)
    : netns_(netns) {
    if (auto flag = ctx.vnetd_flags().missing(args)) {
        throw MeasureError("flag missing: vnetd has no " + *flag);
    }
    log_path_ = ctx.log_path("vnetd-" + label + ".log");
    stats_path_ = log_path_.substr(0, log_path_.size() - 4) + ".stats.json";
    const std::string cpu = std::to_string(ctx.dut_cpu());
    args.insert(args.end(), {"--cpu", cpu, "--log-level", log_level, "--stats-file", stats_path_});
    ProcessSpec spec;
    spec.name = "vnetd " + label;
    spec.argv = {ctx.tools().vnetd};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cpu = ctx.dut_cpu();
    spec.netns = netns;
    spec.output_path = log_path_;
    process_ = ChildProcess(spec);
}

std::string VnetdInstance::failure() {
    if (process_.running()) {
        return "";
    }
    const std::string last = last_line_of(log_path_);
    return "vnetd exited" + (last.empty() ? std::string() : ": " + last);
}

void VnetdInstance::wait_for_socket(const std::string& path, double timeout_s) {
    bench::wait_for_socket(
        path, timeout_s, [this] { return failure(); }, "vnetd");
}

void VnetdInstance::wait_for_link(const std::string& ifname, double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (!link_exists(netns_, ifname)) {
        if (std::string why = failure(); !why.empty()) {
            throw MeasureError(why);
        }
        if (Clock::now() > end) {
            throw MeasureError("vnetd did not create tap " + ifname);
        }
        sleep_for(0.02);
    }
}

nlohmann::json VnetdInstance::stop() {
    process_.stop(SIGTERM, 5);
    return stats();
}

nlohmann::json VnetdInstance::stats() const {
    // vnetd renames a finished file into place: never a half-written one.
    std::ifstream in(stats_path_);
    if (!in) {
        return nullptr;
    }
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
        return nullptr;
    }
}

nlohmann::json vnetd_counters_summary(const nlohmann::json& stats) {
    nlohmann::json out = nlohmann::json::object();
    if (!stats.is_object() || !stats.contains("ports")) {
        return out;
    }
    for (const auto& port : stats["ports"]) {
        // Summed over the port's queues (a VM port has one per queue pair).
        nlohmann::json p = nlohmann::json::object();
        for (const char* dir : {"rx", "tx"}) {
            uint64_t packets = 0, bursts = 0, drops = 0, gro_frames = 0, gro_segments = 0;
            for (const auto& q : port.value("queues", nlohmann::json::array())) {
                if (!q.contains(dir)) {
                    continue;
                }
                const auto& c = q[dir];
                // A named copy: iterating items() of a temporary would dangle.
                const nlohmann::json reasons = c.value("drops", nlohmann::json::object());
                for (const auto& [reason, n] : reasons.items()) {
                    drops += n.get<uint64_t>();
                }
                packets += c.value("packets", uint64_t{0});
                bursts += c.value("bursts", uint64_t{0});
                if (c.contains("gro")) {
                    gro_frames += c["gro"].value("frames", uint64_t{0});
                    gro_segments += c["gro"].value("segments", uint64_t{0});
                }
            }
            p[dir] = {{"packets", packets},
                      {"drops", drops},
                      {"mean_burst", bursts ? double(packets) / double(bursts) : 0},
                      {"gro", {{"frames", gro_frames}, {"segments", gro_segments}}}};
        }
        out[port.value("name", "?")] = p;
    }
    if (stats.contains("datapath")) {
        out["datapath"] = stats["datapath"];
    }
    return out;
}

double vnetd_workers_busy_seconds(const BenchContext& ctx, const std::string& control_socket) {
    ProcessSpec ctl;
    ctl.name = "vnetctl worker list";
    ctl.argv = {
        ctx.build_dir() + "/apps/vnetctl", "--socket", control_socket, "--json", "worker", "list"};
    const nlohmann::json workers = nlohmann::json::parse(run_checked(ctl, 10), nullptr, false);
    if (!workers.is_array()) {
        throw MeasureError("vnetctl worker list: not a JSON array");
    }
    double busy = 0;
    for (const nlohmann::json& w : workers) {
        busy += w.value("busy_s", 0.0);
    }
    return busy;
}

uint64_t vnetd_port_rx_packets(const nlohmann::json& stats, const std::string& port) {
    uint64_t sum = 0;
    if (!stats.is_object() || !stats.contains("ports")) {
        return 0;
    }
    for (const auto& p : stats["ports"]) {
        if (p.value("name", "") != port) {
            continue;
        }
        for (const auto& q : p.value("queues", nlohmann::json::array())) {
            if (q.contains("rx")) {
                sum += q["rx"].value("packets", uint64_t{0});
            }
        }
    }
    return sum;
}

uint64_t vnetd_gro_sum(const nlohmann::json& stats, const std::string& field) {
    uint64_t sum = 0;
    if (!stats.is_object() || !stats.contains("ports")) {
        return 0;
    }
    for (const auto& port : stats["ports"]) {
        for (const auto& q : port.value("queues", nlohmann::json::array())) {
            if (q.contains("tx") && q["tx"].contains("gro")) {
                sum += q["tx"]["gro"].value(field, uint64_t{0});
            }
        }
    }
    return sum;
}

}  // namespace vnet::bench
