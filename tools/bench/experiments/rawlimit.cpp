// rawlimit: the physical limit of tap writes. tap_write_limit (tools/bench/peers; a
// tight write() loop of one prebuilt 64 B frame, O_NONBLOCK, IFF_VNET_HDR)
// into a tap in the benchmark's namespace, with and without native
// XDP_DROP on it, and vnetd's guest -> tap rate at 64 B as a fraction of it,
// all in the same run. Reference column: reference/peer-baselines.md.
#include <regex>

#include "experiments/experiments.hpp"
#include "experiments/guest_to_tap.hpp"
#include "harness/netns.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {
namespace {

double run_tap_write_limit(BenchContext& ctx, const std::string& netns,
                           const std::vector<std::string>& extra_args, const std::string& label) {
    ProcessSpec spec;
    spec.name = "tap_write_limit " + label;
    spec.argv = {ctx.tools().tap_write_limit,
                 "-k",
                 "-i",
                 ctx.fresh_ifname("w"),
                 "-s",
                 "64",
                 "-c",
                 std::to_string(ctx.dut_cpu()),
                 "-d",
                 std::to_string(ctx.point_seconds())};
    spec.argv.insert(spec.argv.end(), extra_args.begin(), extra_args.end());
    spec.netns = netns;
    spec.cpu = ctx.dut_cpu();
    const CommandResult r = run_command(spec, ctx.point_seconds() + 30);
    std::smatch m;
    static const std::regex mpps(R"(tap_Mpps=([0-9.]+))");
    if (!r.ok() || !std::regex_search(r.output, m, mpps)) {
        std::string out = r.output;
        while (!out.empty() && out.back() == '\n') {
            out.pop_back();
        }
        throw MeasureError(
            "tap_write_limit failed (exit " + std::to_string(r.status) +
            "): " + out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1));
    }
    return std::stod(m[1].str());
}

}  // namespace

Table run_rawlimit(BenchContext& ctx) {
    Table t;
    t.id = "rawlimit";
    t.title = "the tap-write ceiling at 64 B and vnetd's share of it, Mpps at the tap";
    t.unit = "Mpps";
    t.command =
        "ip netns exec NS tap_write_limit -k -s 64 -c " + std::to_string(ctx.dut_cpu()) +
        " [-x xdp_drop.bpf.o] [-u 64] [-n]; vnet-pktgen -> vnetd --tap T "
        "[--tap-xdp xdp_drop.bpf.o --tap-xdp-mode native] -> same kind of tap in the same netns";
    t.columns = {
        {"reference", "reference Mpps (peer-baselines.md)", ColumnKind::seed, "Mpps"},
        {"measured", "measured Mpps", ColumnKind::ours, "Mpps"},
        {"fraction", "vnetd / raw limit", ColumnKind::ratio, "x"},
    };
    struct RawRow {
        const char* key;
        const char* label;
        double reference;
        std::vector<std::string> args;
        bool in_quick;
    };
    const std::vector<RawRow> raw_rows = {
        {"raw", "raw limit: write() loop", 2.33, {}, true},
        {"raw-xdp",
         "raw limit: write() loop, native XDP_DROP",
         4.1,
         {"-x", ctx.tools().xdp_drop},
         true},
        {"raw-uring", "raw limit: io_uring, 64 writes per submit", 2.34, {"-u", "64"}, false},
        {"raw-napi", "raw limit: write() loop, IFF_NAPI", 1.47, {"-n"}, false},
    };
    for (const RawRow& r : raw_rows) {
        t.add_row(r.key, r.label, true);
        t.cell(r.key, "reference") = Cell::number(r.reference);
        t.cell(r.key, "fraction") = Cell::not_applicable();
    }
    t.add_row("vnetd", "vnetd: vnet-pktgen -> vnetd -> tap");
    t.add_row("vnetd-xdp", "vnetd: vnet-pktgen -> vnetd -> tap, native XDP_DROP");
    t.cell("vnetd", "reference") = Cell::not_applicable();
    t.cell("vnetd-xdp", "reference") = Cell::not_applicable();

    run_guarded(t, [&] {
        Netns ns(ctx.netns_name("rl"));
        std::vector<Point> points;
        for (const RawRow& r : raw_rows) {
            points.push_back({r.key, "measured", r.in_quick, [&ctx, &ns, r](nlohmann::json&) {
                                  return run_tap_write_limit(ctx, ns.name(), r.args, r.key);
                              }});
        }
        points.push_back({"vnetd", "measured", true, [&ctx, &ns](nlohmann::json& x) {
                              return pktgen_vnetd_to_tap(ctx, ns.name(), "rl-vnetd", {}, x);
                          }});
        points.push_back({"vnetd-xdp", "measured", true, [&ctx, &ns](nlohmann::json& x) {
                              return pktgen_vnetd_to_tap(
                                  ctx, ns.name(), "rl-vnetd-xdp",
                                  {"--tap-xdp", ctx.tools().xdp_drop, "--tap-xdp-mode", "native"},
                                  x);
                          }});
        run_points(ctx, t, points);
    });

    t.cell("vnetd", "fraction") =
        ratio_cell(t.cell("vnetd", "measured"), t.cell("raw", "measured"));
    t.cell("vnetd-xdp", "fraction") =
        ratio_cell(t.cell("vnetd-xdp", "measured"), t.cell("raw-xdp", "measured"));
    t.notes.emplace_back(
        "the raw limit runs on the CPU under test, like vnetd; vnet-pktgen (64 B, "
        "burst 128) on the other CPU.");
    t.notes.emplace_back("the DESIGN target is vnetd >= 0.9x the raw write() loop at 64 B.");
    return t;
}

}  // namespace vnet::bench
