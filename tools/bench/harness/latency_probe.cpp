#include "harness/latency_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "harness/interrupt.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {
namespace {

std::string sockperf_or_throw() {
    static const std::optional<std::string> sockperf = find_program("sockperf");
    if (!sockperf) {
        throw MeasureError("sockperf not found (Debian package sockperf)");
    }
    return *sockperf;
}

// Built beside vnet-bench (tools/bench/CMakeLists.txt).
std::string udp_pingpong_or_throw(const BenchContext& ctx) {
    std::string path = ctx.build_dir() + "/tools/bench/udp_pingpong";
    if (access(path.c_str(), X_OK) != 0) {
        throw MeasureError(path + " not built (ninja udp_pingpong)");
    }
    return path;
}

// sockperf's summary: "---> percentile 99.900 =   12.345" (µs).
double sockperf_percentile(const std::string& output, const std::string& percentile) {
    const std::regex re("percentile " + percentile + " = +([0-9.]+)");
    std::smatch m;
    if (!std::regex_search(output, m, re)) {
        throw MeasureError("sockperf printed no percentile " + percentile);
    }
    return std::stod(m[1].str());
}

}  // namespace

SockperfServer::SockperfServer(BenchContext& ctx, const std::string& netns,
                               const std::string& address, int port, int cpu) {
    ProcessSpec spec;
    spec.name = "sockperf server";
    // Line-buffered: "listen on" in its log is the readiness.
    spec.argv = {"stdbuf", "-oL",   "-eL", sockperf_or_throw(), "server",
                 "-i",     address, "-p",  std::to_string(port)};
    spec.cpu = cpu;
    spec.netns = netns;
    spec.output_path = ctx.log_path("sockperf-server.log");
    process_ = ChildProcess(spec);
    for (int i = 0; i < 100; ++i) {
        if (!first_match_in(spec.output_path, "listen on").empty()) {
            return;
        }
        if (!process_.running()) {
            throw MeasureError("sockperf server exited: " + last_line_of(spec.output_path));
        }
        sleep_for(0.05);
    }
    throw MeasureError("sockperf server did not listen");
}

SockperfServer::~SockperfServer() {
    process_.stop(SIGTERM, 5);
}

std::string SockperfServer::failure() {
    return process_.running() ? ""
                              : "sockperf server exited: " + last_line_of(process_.output_path());
}

LatencyResult run_sockperf_pingpong(BenchContext& ctx, const LatencyRun& run) {
    ProcessSpec spec;
    spec.name = "sockperf ping-pong " + run.label;
    spec.argv = {sockperf_or_throw(), "ping-pong", "-i", run.address, "-p",
                 std::to_string(run.port), "-m", std::to_string(run.message_bytes),
                 // The next message as soon as the reply is in (sockperf 3.7
                 // paces ping-pong otherwise, and then finds "No valid
                 // observations" here).
                 "--mps", "max", "-t",
                 std::to_string(std::max(1, static_cast<int>(run.seconds + 0.5)))};
    spec.cpu = run.cpu;
    spec.netns = run.netns;
    const CommandResult r = run_command(spec, run.seconds + 30);
    std::ofstream(ctx.log_path("sockperf-" + run.label + ".log")) << r.output;
    if (!r.ok()) {
        throw MeasureError("sockperf exited " + std::to_string(r.status) + ": " +
                           r.output.substr(r.output.rfind('\n', r.output.size() - 2) + 1));
    }
    if (r.output.find("No messages were received") != std::string::npos ||
        r.output.find("No valid observations") != std::string::npos) {
        throw MeasureError("sockperf: no reply from " + run.address);
    }
    LatencyResult out;
    out.p50_us = sockperf_percentile(r.output, "50.000");
    out.p99_us = sockperf_percentile(r.output, "99.000");
    out.p999_us = sockperf_percentile(r.output, "99.900");
    std::smatch m;
    if (std::regex_search(r.output, m, std::regex("avg-latency=([0-9.]+)"))) {
        out.mean_us = std::stod(m[1].str());
    }
    if (std::regex_search(r.output, m, std::regex("Total ([0-9]+) observations"))) {
        out.samples = std::stoull(m[1].str());
    }
    return out;
}

LatencyResult run_udp_pingpong(BenchContext& ctx, const LatencyRun& run) {
    ProcessSpec spec;
    spec.name = "udp_pingpong " + run.label;
    spec.argv = {udp_pingpong_or_throw(ctx),
                 "-d",
                 run.address,
                 "-p",
                 std::to_string(run.port),
                 "-m",
                 std::to_string(run.message_bytes),
                 "-t",
                 std::to_string(run.seconds),
                 "-w",
                 std::to_string(ctx.warmup_seconds()),
                 "-c",
                 std::to_string(run.cpu)};
    spec.netns = run.netns;
    const CommandResult r = run_command(spec, run.seconds + 30);
    std::ofstream(ctx.log_path("udp_pingpong-" + run.label + ".log")) << r.output;
    if (!r.ok()) {
        throw MeasureError("udp_pingpong exited " + std::to_string(r.status) + ": " + r.output);
    }
    try {
        const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.rfind('{')));
        LatencyResult out;
        out.p50_us = j.at("p50_us").get<double>();
        out.p99_us = j.at("p99_us").get<double>();
        out.p999_us = j.at("p999_us").get<double>();
        out.mean_us = j.at("mean_us").get<double>();
        out.samples = j.at("samples").get<uint64_t>();
        return out;
    } catch (const std::exception& e) {
        throw MeasureError(std::string("udp_pingpong printed no result: ") + e.what());
    }
}

}  // namespace vnet::bench
