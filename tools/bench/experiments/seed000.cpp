// seed000: QEMU opening taps with IFF_NAPI (2023): iperf -l 64/128/4K,
// single stream and -P 12, 593 -> 712 Mbit/s, 1.00 -> 1.18 and 17.6 ->
// 22.7 Gbit/s single stream. Here: the tap <-> vnetd <-> tap topology of
// seed002 with vnetd's defaults, --napi off/on; -P 4 instead of -P 12,
// which does not fit 2 CPUs. Peer: the kernel's veth + bridge, same -l/-P.
#include "experiments/experiments.hpp"
#include "experiments/pair_point.hpp"

namespace vnet::bench {
namespace {

struct SizeRow {
    const char* key;
    const char* label;
    const char* length;
    int parallel;
    double seed_off;  // Gbit/s
    double seed_on;
    bool in_quick;
};

constexpr SizeRow kRows[] = {
    {"l64-p1", "-l 64, 1 stream", "64", 1, 0.593, 0.712, true},
    {"l128-p1", "-l 128, 1 stream", "128", 1, 1.00, 1.18, false},
    {"l4k-p1", "-l 4K, 1 stream", "4K", 1, 17.6, 22.7, false},
    {"l64-p4", "-l 64, -P 4 (seed: -P 12)", "64", 4, 6.35, 7.78, false},
    {"l128-p4", "-l 128, -P 4 (seed: -P 12)", "128", 4, 10.8, 14.2, false},
    {"l4k-p4", "-l 4K, -P 4 (seed: -P 12, line rate)", "4K", 4, 23.6, 23.6, false},
};

}  // namespace

Table run_seed000(BenchContext& ctx) {
    Table t;
    t.id = "seed000";
    t.title = "iperf3 -l 64/128/4K through tap <-> vnetd <-> tap, Gbit/s (IFF_NAPI off/on)";
    t.unit = "Gbit/s";
    t.command = "vnetd --tap A --tap B [--napi] --cpu " + std::to_string(ctx.dut_cpu()) +
                "; ip netns exec b iperf3 -c <a> -l L [-P 4] -t S -J (CPU " +
                std::to_string(ctx.load_cpu()) + ")";
    t.columns = {
        {"seed_off", "seed NAPI off", ColumnKind::seed, "Gbit/s"},
        {"seed_on", "seed NAPI on", ColumnKind::seed, "Gbit/s"},
        {"seed_gain", "seed gain", ColumnKind::gain, "%"},
        {"napi_off", "vnetd NAPI off", ColumnKind::ours, "Gbit/s"},
        {"napi_on", "vnetd NAPI on", ColumnKind::ours, "Gbit/s"},
        {"gain", "vnetd gain", ColumnKind::gain, "%"},
        {"kernel", "kernel veth+bridge", ColumnKind::peer, "Gbit/s"},
        {"vs_kernel", "best vnetd / kernel", ColumnKind::ratio, "x"},
    };
    for (const SizeRow& r : kRows) {
        t.add_row(r.key, r.label);
        t.cell(r.key, "seed_off") = Cell::number(r.seed_off);
        t.cell(r.key, "seed_on") = Cell::number(r.seed_on);
        t.cell(r.key, "seed_gain") = gain_cell(Cell::number(r.seed_on), Cell::number(r.seed_off));
    }

    run_guarded(t, [&] {
        TapPairTopology topo(ctx);
        IperfServer server(ctx, topo.ns_a(), 5201);
        std::vector<Point> points;
        for (const SizeRow& r : kRows) {
            for (bool napi : {false, true}) {
                PairPoint p;
                p.label = std::string("s0-") + r.key + (napi ? "-napi" : "");
                std::vector<std::string> args;
                if (napi) {
                    args.push_back("--napi");
                }
                p.start = [&ctx, &topo, args, label = p.label] {
                    return start_vnetd_pair(ctx, topo, label, args);
                };
                p.length = r.length;
                p.parallel = r.parallel;
                points.push_back({r.key, napi ? "napi_on" : "napi_off", r.in_quick,
                                  [&ctx, &topo, &server, p](nlohmann::json& x) {
                                      return run_pair_point(ctx, topo, server, p, x);
                                  }});
            }
            PairPoint k;
            k.label = std::string("s0-") + r.key + "-kernel";
            k.start = [&ctx, &topo] { return start_kernel_bridge(ctx, topo); };
            k.length = r.length;
            k.parallel = r.parallel;
            points.push_back(
                {r.key, "kernel", r.in_quick, [&ctx, &topo, &server, k](nlohmann::json& x) {
                     return run_pair_point(ctx, topo, server, k, x);
                 }});
        }
        run_points(ctx, t, points);
    });
    for (const SizeRow& r : kRows) {
        t.cell(r.key, "gain") = gain_cell(t.cell(r.key, "napi_on"), t.cell(r.key, "napi_off"));
        const Cell& off = t.cell(r.key, "napi_off");
        const Cell& on = t.cell(r.key, "napi_on");
        const Cell& best =
            !on.has_number() ? off : (!off.has_number() || on.median() > off.median() ? on : off);
        t.cell(r.key, "vs_kernel") = ratio_cell(best, t.cell(r.key, "kernel"));
    }
    t.notes.emplace_back(
        "-P 4 rows: the seed ran -P 12 (guest with 4 queues on an ICX host); 12 streams do not "
        "fit 2 CPUs, so its -P 12 numbers stand next to our -P 4.");
    t.notes.emplace_back(
        "seed: 2023 QEMU IFF_NAPI patch, guest -> remote host over 25 GbE; the gain columns "
        "compare.");
    return t;
}

}  // namespace vnet::bench
