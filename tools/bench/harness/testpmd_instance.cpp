#include "harness/testpmd_instance.hpp"

#include <chrono>

#include "harness/interrupt.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {

TestpmdInstance::TestpmdInstance(BenchContext& ctx, const TestpmdSpec& spec) {
    if (!ctx.tools().testpmd) {
        throw MeasureError("dpdk-testpmd not found (Debian package dpdk)");
    }
    prefix_ = "vnet-bench-" + ctx.run_id() + "-" + spec.label;
    log_path_ = ctx.log_path("testpmd-" + spec.label + ".log");
    ProcessSpec p;
    p.name = "testpmd " + spec.label;
    // A file is block-buffered: line-buffer stdout so readiness shows at once.
    p.argv = {"stdbuf",
              "-oL",
              *ctx.tools().testpmd,
              "--lcores",
              "0@" + std::to_string(spec.main_cpu) + ",1@" + std::to_string(spec.forwarding_cpu),
              "--main-lcore",
              "0",
              "--no-pci",
              "--no-huge",
              "-m",
              std::to_string(spec.memory_mb),
              "--file-prefix",
              prefix_};
    for (const std::string& v : spec.vdevs) {
        p.argv.insert(p.argv.end(), {"--vdev", v});
    }
    p.argv.insert(p.argv.end(), {"--", "--nb-cores=1", "--stats-period", "1"});
    p.argv.insert(p.argv.end(), spec.app_args.begin(), spec.app_args.end());
    p.netns = spec.netns;
    p.output_path = log_path_;
    process_ = ChildProcess(p);
}

TestpmdInstance::~TestpmdInstance() {
    stop();
}

void TestpmdInstance::stop() {
    // SIGINT: testpmd stops forwarding, closes its ports (the taps go away)
    // and prints its final stats.
    process_.stop(SIGINT, 10);
    ProcessSpec rm;
    rm.name = "rm";
    rm.argv = {"rm", "-rf", "/var/run/dpdk/" + prefix_};
    rm.interruptible = false;
    try {
        run_command(rm, 10);
    } catch (...) {
    }
}

std::string TestpmdInstance::failure() {
    if (process_.running()) {
        return "";
    }
    const std::string last = last_line_of(log_path_);
    return "testpmd exited" + (last.empty() ? std::string() : ": " + last);
}

void TestpmdInstance::wait_for_log(const std::string& regex, double timeout_s) {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
    while (first_match_in(log_path_, regex).empty()) {
        if (std::string why = failure(); !why.empty()) {
            throw MeasureError(why);
        }
        if (Clock::now() > end) {
            throw MeasureError("testpmd: no '" + regex + "' in its log within " +
                               std::to_string(int(timeout_s)) + " s: " + last_line_of(log_path_));
        }
        sleep_for(0.05);
    }
}

TestpmdSpec testpmd_txonly_generator(const BenchContext& ctx, const std::string& label,
                                     const std::string& socket_path,
                                     const TxonlyFrontEnd& front_end) {
    TestpmdSpec s;
    s.label = label;
    const std::string queues = std::to_string(front_end.queues);
    s.vdevs = {"net_virtio_user0,path=" + socket_path + ",queues=" + queues +
               ",queue_size=1024,mac=02:00:00:00:00:01" + (front_end.packed ? ",packed_vq=1" : "")};
    s.app_args = {"--forward-mode=txonly",
                  "--txpkts=" + std::to_string(front_end.frame_bytes),
                  "--burst=32",
                  "--txd=1024",
                  "--rxd=1024",
                  "--total-num-mbufs=" + std::to_string(front_end.total_mbufs),
                  "--eth-peer=0,02:00:00:00:00:02"};
    if (front_end.queues > 1) {
        s.app_args.insert(s.app_args.end(), {"--rxq=" + queues, "--txq=" + queues});
    }
    s.forwarding_cpu = ctx.load_cpu();
    s.main_cpu = ctx.dut_cpu();
    return s;
}

namespace {

// A DPDK peer under test: forwarding on the CPU under test, the idle main
// lcore on the load CPU.
TestpmdSpec back_end(const BenchContext& ctx, const std::string& label,
                     std::vector<std::string> vdevs, const std::string& forward_mode,
                     const std::string& netns) {
    TestpmdSpec s;
    s.label = label;
    s.vdevs = std::move(vdevs);
    s.app_args = {"--forward-mode=" + forward_mode, "--burst=32", "--txd=1024", "--rxd=1024",
                  "--total-num-mbufs=65536"};
    s.netns = netns;
    s.forwarding_cpu = ctx.dut_cpu();
    s.main_cpu = ctx.load_cpu();
    s.memory_mb = 1024;
    return s;
}

}  // namespace

TestpmdSpec testpmd_vhost_rxonly(const BenchContext& ctx, const std::string& label,
                                 const std::string& socket_path) {
    return back_end(ctx, label, {"net_vhost0,iface=" + socket_path + ",queues=1"}, "rxonly", "");
}

TestpmdSpec testpmd_vhost_to_tap(const BenchContext& ctx, const std::string& label,
                                 const std::string& socket_path, const std::string& tap,
                                 const std::string& netns) {
    return back_end(ctx, label,
                    {"net_vhost0,iface=" + socket_path + ",queues=1", "net_tap0,iface=" + tap},
                    "io", netns);
}

TestpmdSpec testpmd_vhost_io(const BenchContext& ctx, const std::string& label,
                             const std::vector<std::string>& socket_paths) {
    std::vector<std::string> vdevs;
    for (size_t i = 0; i < socket_paths.size(); ++i) {
        vdevs.push_back("net_vhost" + std::to_string(i) + ",iface=" + socket_paths[i] +
                        ",queues=1");
    }
    return back_end(ctx, label, std::move(vdevs), "io", "");
}

TestpmdSpec testpmd_tap_to_tap(const BenchContext& ctx, const std::string& label,
                               const std::string& tap_a, const std::string& tap_b,
                               const std::string& netns) {
    return back_end(ctx, label, {"net_tap0,iface=" + tap_a, "net_tap1,iface=" + tap_b}, "io",
                    netns);
}

}  // namespace vnet::bench
