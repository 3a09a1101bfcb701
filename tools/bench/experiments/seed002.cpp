// seed002: tun NAPI for batched XDP buffs, so GRO can merge a batch (2022):
// iperf3 single TCP stream 4.63 -> 9.28 Gbit/s. Here: vnetd cross-connects
// two taps, each in its own netns with an address; iperf3 client in b ->
// server in a. GRO off/on x IFF_NAPI off/on, and GRO off/on with a sender
// that does not use TSO (so vnetd's GRO has MSS-sized segments to merge).
// Peers: the kernel's veth + bridge (the upper anchor), a naive
// read()/write() forwarder, DPDK testpmd with two net_tap ports.
#include <cstdio>

#include "experiments/experiments.hpp"
#include "experiments/pair_point.hpp"

namespace vnet::bench {
namespace {

struct GroRow {
    const char* key;
    const char* label;
    bool gro;
    bool napi;
    bool tso_off;
    double seed;  // 0: none
    bool in_quick;
};

constexpr GroRow kRows[] = {
    {"gro0-napi0", "GRO off, NAPI off", false, false, false, 4.63, true},
    {"gro1-napi0", "GRO on, NAPI off", true, false, false, 9.28, true},
    {"gro0-napi1", "GRO off, NAPI on", false, true, false, 4.63, false},
    {"gro1-napi1", "GRO on, NAPI on", true, true, false, 9.28, false},
    {"gro0-notso", "GRO off, sender TSO/GSO off", false, false, true, 0, true},
    {"gro1-notso", "GRO on, sender TSO/GSO off", true, false, true, 0, true},
};

const char* gro_off_twin(const GroRow& r) {
    for (const GroRow& o : kRows) {
        if (!o.gro && o.napi == r.napi && o.tso_off == r.tso_off) {
            return o.key;
        }
    }
    return nullptr;
}

std::string verdict(const Cell& c, double target) {
    if (!c.has_number()) {
        return "n/a (" + c.na_reason() + ")";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.2fx: %s", c.median(),
                  c.median() >= target ? "met" : "missed");
    return buf;
}

}  // namespace

Table run_seed002(BenchContext& ctx) {
    Table t;
    t.id = "seed002";
    t.title = "iperf3 1 TCP stream through tap <-> vnetd <-> tap, Gbit/s (GRO x IFF_NAPI)";
    t.unit = "Gbit/s";
    t.command = "vnetd --tap A --tap B --gro on|off [--napi] --cpu " +
                std::to_string(ctx.dut_cpu()) + "; ip netns exec b iperf3 -c <a> -t S -J (CPU " +
                std::to_string(ctx.load_cpu()) + ") [ethtool -K B tso off gso off in b]";
    t.columns = {
        {"seed", "seed Gbit/s", ColumnKind::seed, "Gbit/s"},
        {"measured", "measured Gbit/s", ColumnKind::ours, "Gbit/s"},
        {"gro_gain", "GRO on / off", ColumnKind::ratio, "x"},
        {"vs_kernel", "vs kernel veth+bridge", ColumnKind::ratio, "x"},
        {"segs_per_frame", "GRO segments per merged frame", ColumnKind::info, ""},
    };
    for (const GroRow& r : kRows) {
        t.add_row(r.key, r.label);
        t.cell(r.key, "seed") =
            r.seed > 0 ? Cell::number(r.seed) : Cell::not_available("the seed did not vary TSO");
    }
    t.add_row("kernel", "peer: kernel veth + bridge", true);
    t.add_row("naive", "peer: naive read()/write() forwarder", true);
    t.add_row("testpmd", "peer: DPDK testpmd, 2 x net_tap, io", true);
    for (const char* peer : {"kernel", "naive", "testpmd"}) {
        t.cell(peer, "seed") = Cell::not_applicable();
        t.cell(peer, "gro_gain") = Cell::not_applicable();
        t.cell(peer, "segs_per_frame") = Cell::not_applicable();
    }

    run_guarded(t, [&] {
        TapPairTopology topo(ctx);
        IperfServer server(ctx, topo.ns_a(), 5201);
        std::vector<Point> points;
        for (const GroRow& r : kRows) {
            std::vector<std::string> args{"--gro", r.gro ? "on" : "off"};
            if (r.napi) {
                args.push_back("--napi");
            }
            PairPoint p;
            p.label = std::string("s2-") + r.key;
            p.start = [&ctx, &topo, args, label = p.label] {
                return start_vnetd_pair(ctx, topo, label, args);
            };
            p.sender_tso_off = r.tso_off;
            points.push_back(
                {r.key, "measured", r.in_quick,
                 [&ctx, &topo, &server, p, &t, key = std::string(r.key)](nlohmann::json& x) {
                     const double gbps = run_pair_point(ctx, topo, server, p, x);
                     const uint64_t frames = x.value("gro_frames", uint64_t{0});
                     const uint64_t segs = x.value("gro_segments", uint64_t{0});
                     // 0: nothing merged (GRO off, or nothing to merge).
                     t.cell(key, "segs_per_frame") =
                         Cell::number(frames ? double(segs) / double(frames) : 0);
                     return gbps;
                 }});
        }
        auto peer_point = [&](const char* key,
                              std::function<std::unique_ptr<PairForwarder>()> start,
                              bool in_quick) {
            PairPoint p;
            p.label = std::string("s2-") + key;
            p.start = std::move(start);
            points.push_back(
                {key, "measured", in_quick, [&ctx, &topo, &server, p](nlohmann::json& x) {
                     return run_pair_point(ctx, topo, server, p, x);
                 }});
        };
        peer_point(
            "kernel", [&] { return start_kernel_bridge(ctx, topo); }, true);
        peer_point(
            "naive", [&] { return start_naive_pair(ctx, topo); }, true);
        peer_point(
            "testpmd", [&] { return start_testpmd_pair(ctx, topo); }, false);
        run_points(ctx, t, points);
    });

    const Cell kernel = t.cell("kernel", "measured");
    for (const GroRow& r : kRows) {
        if (const Cell& m = t.cell(r.key, "measured"); !m.has_number()) {
            t.cell(r.key, "segs_per_frame") = Cell::not_available(m.na_reason());
        }
        t.cell(r.key, "vs_kernel") = ratio_cell(t.cell(r.key, "measured"), kernel);
        t.cell(r.key, "gro_gain") =
            r.gro ? ratio_cell(t.cell(r.key, "measured"), t.cell(gro_off_twin(r), "measured"))
                  : Cell::not_applicable();
    }
    t.cell("kernel", "vs_kernel") = Cell::not_applicable();
    t.cell("naive", "vs_kernel") = ratio_cell(t.cell("naive", "measured"), kernel);
    t.cell("testpmd", "vs_kernel") = ratio_cell(t.cell("testpmd", "measured"), kernel);

    Cell best;
    for (const GroRow& r : kRows) {
        const Cell& c = t.cell(r.key, "vs_kernel");
        if (c.has_number() && (!best.has_number() || c.median() > best.median())) {
            best = c;
        }
    }
    if (!best.has_number()) {
        best = Cell::not_available("no vnetd row measured");
    }
    t.notes.emplace_back("target >= 0.8x the kernel (best vnetd row): " + verdict(best, 0.8));
    t.notes.emplace_back("target GRO on / off >= 1.5x with the sender's TSO off: " +
                         verdict(t.cell("gro1-notso", "gro_gain"), 1.5));
    t.notes.emplace_back(
        "seed: 2022 series, [iperf server] <-> tap <-> testpmd (virtio-user on vhost-net) <-> "
        "NIC <-> [client], 4.63 -> 9.28 Gbit/s when NAPI let GRO merge the batch.");
    t.notes.emplace_back(
        "testpmd's tap PMD is driven by one realtime signal per frame "
        "(peer-baselines.md pitfall 5): expect it last.");
    return t;
}

}  // namespace vnet::bench
