// seed004: vhost_net TX batching + tun rx batching (2017). Guest pktgen
// (burst 128) -> back end -> tap; the seed swept rx-frames 0..64, which is
// vnetd's --tx-batch (0 = per-packet), and switched MSG_MORE off at 64,
// which is --tx-peek off. Peer: DPDK testpmd net_vhost -> net_tap.
#include <cstdio>

#include "experiments/experiments.hpp"
#include "experiments/guest_to_tap.hpp"
#include "harness/netns.hpp"

namespace vnet::bench {
namespace {

struct BatchRow {
    const char* key;
    const char* label;
    int tx_batch;
    bool peek;
    double seed_mpps;
    bool in_quick;
};

constexpr BatchRow kRows[] = {
    {"b0", "tx_batch 0 (per-packet)", 0, true, 0.91, true},
    {"b4", "tx_batch 4", 4, true, 1.00, false},
    {"b8", "tx_batch 8", 8, true, 1.00, false},
    {"b16", "tx_batch 16", 16, true, 1.01, true},
    {"b32", "tx_batch 32", 32, true, 1.07, false},
    {"b48", "tx_batch 48", 48, true, 1.07, false},
    {"b64", "tx_batch 64", 64, true, 1.08, true},
    {"b64-nopeek", "tx_batch 64, --tx-peek off", 64, false, 0.91, true},
};

}  // namespace

Table run_seed004(BenchContext& ctx) {
    Table t;
    t.id = "seed004";
    t.title = "guest pktgen -> vnetd -> tap, 64 B, Mpps at the tap (vhost_net TX batching)";
    t.unit = "Mpps";
    t.command = "vnet-pktgen --tx --burst 128 --size 64 (CPU " + std::to_string(ctx.load_cpu()) +
                ") -> vnetd --socket-path S --tap T --tx-batch N [--tx-peek off] --cpu " +
                std::to_string(ctx.dut_cpu()) + " -> tap T in a netns (rx_packets + rx_dropped)";
    t.columns = {
        {"seed", "seed Mpps", ColumnKind::seed, "Mpps"},
        {"seed_ratio", "seed vs rx-frames 0", ColumnKind::ratio, "x"},
        {"measured", "measured Mpps", ColumnKind::ours, "Mpps"},
        {"ratio", "vs tx_batch 0", ColumnKind::ratio, "x"},
        {"vs_peer", "vs DPDK (same run)", ColumnKind::ratio, "x"},
    };
    for (const BatchRow& r : kRows) {
        t.add_row(r.key, r.label);
        t.cell(r.key, "seed") = Cell::number(r.seed_mpps);
        t.cell(r.key, "seed_ratio") = Cell::number(r.seed_mpps / kRows[0].seed_mpps);
    }
    t.add_row("dpdk", "peer: DPDK testpmd net_vhost -> net_tap (io)", true);
    t.cell("dpdk", "seed") = Cell::not_applicable();
    t.cell("dpdk", "seed_ratio") = Cell::not_applicable();
    t.cell("dpdk", "vs_peer") = Cell::not_applicable();

    run_guarded(t, [&] {
        Netns ns(ctx.netns_name("s4"));
        std::vector<Point> points;
        for (const BatchRow& r : kRows) {
            std::vector<std::string> args{"--tx-batch", std::to_string(r.tx_batch)};
            if (!r.peek) {
                args.insert(args.end(), {"--tx-peek", "off"});
            }
            points.push_back(
                {r.key, "measured", r.in_quick, [&ctx, &ns, args, r](nlohmann::json& x) {
                     return pktgen_vnetd_to_tap(ctx, ns.name(), std::string("s4-") + r.key, args,
                                                x);
                 }});
        }
        points.push_back({"dpdk", "measured", true, [&ctx, &ns](nlohmann::json& x) {
                              return pktgen_dpdk_to_tap(ctx, ns.name(), "s4-dpdk", x);
                          }});
        run_points(ctx, t, points);
    });

    const Cell base = t.cell("b0", "measured");
    const Cell peer = t.cell("dpdk", "measured");
    for (const BatchRow& r : kRows) {
        t.cell(r.key, "ratio") = ratio_cell(t.cell(r.key, "measured"), base);
        t.cell(r.key, "vs_peer") = ratio_cell(t.cell(r.key, "measured"), peer);
    }
    t.cell("dpdk", "ratio") = ratio_cell(peer, base);
    t.notes.emplace_back(
        "seed: 2017 series, guest pktgen burst 128 through vhost_net/tun to an mlx4 NIC; the "
        "absolute numbers differ by machine, the ratio columns compare.");
    t.notes.emplace_back(
        "the seed's last row is rx-frames 64 without MSG_MORE; here --tx-peek off (no holding "
        "of a batch while the ring has more).");
    return t;
}

}  // namespace vnet::bench
