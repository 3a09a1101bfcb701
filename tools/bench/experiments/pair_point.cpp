#include "experiments/pair_point.hpp"

#include "harness/rate_meter.hpp"
#include "harness/vnetd_instance.hpp"

namespace vnet::bench {

double run_pair_point(BenchContext& ctx, TapPairTopology& topo, const IperfServer& server,
                      const PairPoint& point, nlohmann::json& extra) {
    topo.clear_stale_links();
    std::unique_ptr<PairForwarder> fwd = point.start();
    if (point.sender_tso_off) {
        topo.disable_sender_tso();
    }
    IperfRun run;
    run.netns = topo.ns_b();
    run.server_address = topo.address_a();
    run.port = server.port();
    run.seconds = ctx.point_seconds();
    run.omit_seconds = ctx.quick() ? 0 : 1;
    run.length = point.length;
    run.parallel = point.parallel;
    IperfResult r;
    try {
        r = run_iperf_client(ctx, run, point.label);
    } catch (const MeasureError& e) {
        const std::string why = fwd->failure();
        throw MeasureError(why.empty() ? e.what() : why);
    }
    const nlohmann::json report = fwd->finish();
    if (report.is_object() && report.contains("ports")) {
        extra["vnetd"] = vnetd_counters_summary(report);
        extra["gro_frames"] = vnetd_gro_sum(report, "frames");
        extra["gro_segments"] = vnetd_gro_sum(report, "segments");
    }
    extra["retransmits"] = r.retransmits;
    return r.gbps;
}

}  // namespace vnet::bench
