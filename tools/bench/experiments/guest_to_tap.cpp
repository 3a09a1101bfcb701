#include "experiments/guest_to_tap.hpp"

#include "harness/link_stats.hpp"
#include "harness/netns.hpp"
#include "harness/pktgen_source.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"

namespace vnet::bench {

uint64_t TapRxCounter::operator()() {
    auto s = reader_.read(ifname_);
    if (!s) {
        throw MeasureError("cannot read the counters of " + ifname_);
    }
    return s->rx_frames();
}

namespace {

double measure_tap_with_pktgen(BenchContext& ctx, const std::string& netns, const std::string& tap,
                               const std::string& label, const std::string& sock,
                               const std::function<std::string()>& backend_failure) {
    ChildProcess gen = start_pktgen_tx(ctx, label, sock);
    TapRxCounter count(netns, tap);
    RateWindow window;
    window.warmup_s = ctx.warmup_seconds();
    window.window_s = ctx.point_seconds();
    const double rate = measure_rate(std::ref(count), window, [&]() -> std::string {
        if (std::string why = backend_failure(); !why.empty()) {
            return why;
        }
        return gen.running() ? "" : "vnet-pktgen exited: " + last_line_of(gen.output_path());
    });
    gen.stop(SIGINT, 5);
    return rate / 1e6;
}

}  // namespace

double pktgen_vnetd_to_tap(BenchContext& ctx, const std::string& netns, const std::string& label,
                           const std::vector<std::string>& vnetd_args, nlohmann::json& extra) {
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("t");
    std::vector<std::string> args{"--socket-path", sock, "--tap", tap};
    args.insert(args.end(), vnetd_args.begin(), vnetd_args.end());
    VnetdInstance vnetd(ctx, label, args, netns);
    vnetd.wait_for_socket(sock);
    vnetd.wait_for_link(tap);
    link_up(netns, tap);
    const double mpps =
        measure_tap_with_pktgen(ctx, netns, tap, label, sock, [&] { return vnetd.failure(); });
    extra["vnetd"] = vnetd_counters_summary(vnetd.stop());
    return mpps;
}

double pktgen_dpdk_to_tap(BenchContext& ctx, const std::string& netns, const std::string& label,
                          nlohmann::json& extra) {
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("d");
    TestpmdInstance pmd(ctx, testpmd_vhost_to_tap(ctx, label, sock, tap, netns));
    pmd.wait_for_log("binding succeeded|socket created");
    wait_for_link(netns, tap);
    link_up(netns, tap);
    const double mpps =
        measure_tap_with_pktgen(ctx, netns, tap, label, sock, [&] { return pmd.failure(); });
    pmd.stop();
    extra["testpmd_log"] = pmd.log_path();
    return mpps;
}

}  // namespace vnet::bench
