#include "harness/iperf.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "harness/interrupt.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {

IperfServer::IperfServer(BenchContext& ctx, const std::string& netns, int port) : port_(port) {
    if (!ctx.tools().iperf3) {
        throw MeasureError("iperf3 not found (Debian package iperf3)");
    }
    ProcessSpec spec;
    spec.name = "iperf3 server";
    // --forceflush: its log is a file, and "Server listening" is the readiness.
    spec.argv = {*ctx.tools().iperf3, "-s", "-p", std::to_string(port), "--forceflush"};
    spec.cpu = ctx.load_cpu();
    spec.netns = netns;
    spec.output_path = ctx.log_path("iperf3-server.log");
    process_ = ChildProcess(spec);
    for (int i = 0; i < 100; ++i) {
        std::ifstream in(spec.output_path);
        std::stringstream ss;
        ss << in.rdbuf();
        if (ss.str().find("Server listening") != std::string::npos) {
            return;
        }
        if (!process_.running()) {
            throw MeasureError("iperf3 server exited: " + last_line_of(spec.output_path));
        }
        sleep_for(0.05);
    }
    throw MeasureError("iperf3 server did not listen");
}

IperfResult run_iperf_client(BenchContext& ctx, const IperfRun& run, const std::string& label) {
    ProcessSpec spec;
    spec.name = "iperf3 client " + label;
    spec.argv = {*ctx.tools().iperf3,
                 "-c",
                 run.server_address,
                 "-p",
                 std::to_string(run.port),
                 "-t",
                 std::to_string(std::max(1L, std::lround(run.seconds))),
                 "-J",
                 "--connect-timeout",
                 "3000"};
    if (run.omit_seconds > 0) {
        spec.argv.insert(spec.argv.end(), {"-O", std::to_string(run.omit_seconds)});
    }
    if (!run.length.empty()) {
        spec.argv.insert(spec.argv.end(), {"-l", run.length});
    }
    if (run.parallel > 1) {
        spec.argv.insert(spec.argv.end(), {"-P", std::to_string(run.parallel)});
    }
    spec.cpu = ctx.load_cpu();
    spec.netns = run.netns;
    nlohmann::json j;
    // The server takes a moment to reset after a test ("the server is busy
    // running a test"): try again a few times.
    for (int attempt = 1;; ++attempt) {
        const CommandResult r = run_command(spec, run.seconds + run.omit_seconds + 30);
        std::ofstream(ctx.log_path("iperf3-" + label + ".json")) << r.output;
        try {
            j = nlohmann::json::parse(r.output);
        } catch (const nlohmann::json::exception&) {
            throw MeasureError("iperf3 printed no JSON (exit " + std::to_string(r.status) + ")");
        }
        if (!j.contains("error")) {
            break;
        }
        const std::string error = j["error"].get<std::string>();
        if (error.find("busy") == std::string::npos || attempt == 5) {
            throw MeasureError("iperf3: " + error);
        }
        sleep_for(1.0);
    }
    try {
        IperfResult out;
        const auto& end = j.at("end");
        out.gbps = end.at("sum_received").at("bits_per_second").get<double>() / 1e9;
        if (end.contains("sum_sent")) {
            out.retransmits = end["sum_sent"].value("retransmits", uint64_t{0});
        }
        return out;
    } catch (const nlohmann::json::exception& e) {
        throw MeasureError(std::string("iperf3 JSON without end.sum_received: ") + e.what());
    }
}

}  // namespace vnet::bench
