// seed003: vhost_net TX batching via XDP buffs (2018). testpmd txonly with
// net_virtio_user in the guest's role -> back end -> tap; per-packet
// (--tx-batch 0) vs batched (--tx-batch 64) on a plain tap, with native
// XDP_DROP on it, and with XDP_REDIRECT to a second tap (counted by that
// tap's reader). Peer: DPDK testpmd net_vhost -> net_tap with the same XDP
// programs attached by `ip link set dev X xdpdrv obj F sec xdp`.
#include "experiments/experiments.hpp"
#include "experiments/guest_to_tap.hpp"
#include "experiments/txonly_front_end.hpp"
#include "harness/netns.hpp"
#include "harness/rate_meter.hpp"
#include "harness/tap_reader.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"
#include "harness/xdp_redirect_map.hpp"

#include <memory>

namespace vnet::bench {
namespace {

enum class TapProgram { none, drop, redirect };

struct Variant {
    const char* key;
    const char* label;
    TapProgram program;
    double seed_gain;  // % (NaN: not published)
};

// Counts the frames of the point: the tap's rx_packets + rx_dropped, or
// for XDP_REDIRECT what the second tap's reader read.
std::function<uint64_t()> frame_counter(std::shared_ptr<TapRxCounter> tap_count,
                                        const TapReader* reader) {
    if (reader) {
        return [reader] { return reader->frames(); };
    }
    return [tap_count] { return (*tap_count)(); };
}

double vnetd_point(BenchContext& ctx, const std::string& netns, const Variant& v, int tx_batch,
                   nlohmann::json& extra) {
    const std::string label = std::string("s3-") + v.key + "-b" + std::to_string(tx_batch);
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("t");
    std::vector<std::string> args{"--socket-path",         sock, "--tap", tap, "--tx-batch",
                                  std::to_string(tx_batch)};
    std::unique_ptr<TapReader> reader;
    if (v.program == TapProgram::drop) {
        args.insert(args.end(), {"--tap-xdp", ctx.tools().xdp_drop, "--tap-xdp-mode", "native"});
    } else if (v.program == TapProgram::redirect) {
        const std::string second = ctx.fresh_ifname("r");
        args.insert(args.end(), {"--tap-xdp", ctx.tools().xdp_redirect, "--tap-xdp-mode", "native",
                                 "--tap-xdp-redirect", second});
        if (auto flag = ctx.vnetd_flags().missing(args)) {
            throw MeasureError("flag missing: vnetd has no " + *flag);
        }
        reader = std::make_unique<TapReader>(netns, second, ctx.load_cpu());
    }
    VnetdInstance vnetd(ctx, label, args, netns);
    vnetd.wait_for_socket(sock);
    vnetd.wait_for_link(tap);
    link_up(netns, tap);
    auto tap_count = std::make_shared<TapRxCounter>(netns, tap);
    const double mpps = measure_with_txonly_front_end(
        ctx, label, sock, {}, sampled_when_read(frame_counter(tap_count, reader.get())),
        [&] { return vnetd.failure(); });
    extra["vnetd"] = vnetd_counters_summary(vnetd.stop());
    return mpps;
}

double dpdk_point(BenchContext& ctx, const std::string& netns, const Variant& v,
                  nlohmann::json& extra) {
    const std::string label = std::string("s3-") + v.key + "-dpdk";
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("d");
    std::unique_ptr<TapReader> reader;
    if (v.program == TapProgram::redirect) {
        reader = std::make_unique<TapReader>(netns, ctx.fresh_ifname("r"), ctx.load_cpu());
    }
    TestpmdInstance pmd(ctx, testpmd_vhost_to_tap(ctx, label, sock, tap, netns));
    pmd.wait_for_log("binding succeeded|socket created");
    wait_for_link(netns, tap);
    link_up(netns, tap);
    if (v.program == TapProgram::drop) {
        attach_xdp_native(netns, tap, ctx.tools().xdp_drop);
    } else if (v.program == TapProgram::redirect) {
        attach_xdp_native(netns, tap, ctx.tools().xdp_redirect);
        point_xdp_redirect_map(netns, tap, reader->ifname());
    }
    auto tap_count = std::make_shared<TapRxCounter>(netns, tap);
    const double mpps = measure_with_txonly_front_end(
        ctx, label, sock, {}, sampled_when_read(frame_counter(tap_count, reader.get())),
        [&] { return pmd.failure(); });
    pmd.stop();
    extra["testpmd_log"] = pmd.log_path();
    return mpps;
}

}  // namespace

Table run_seed003(BenchContext& ctx) {
    Table t;
    t.id = "seed003";
    t.title = "testpmd txonly (virtio-user) -> vnetd -> tap with XDP, 64 B, Mpps";
    t.unit = "Mpps";
    t.command = "dpdk-testpmd --vdev net_virtio_user0 --forward-mode=txonly (CPU " +
                std::to_string(ctx.load_cpu()) +
                ") -> vnetd --tap T --tx-batch 0|64 [--tap-xdp xdp_drop.bpf.o | --tap-xdp "
                "xdp_redirect.bpf.o --tap-xdp-redirect R; --tap-xdp-mode native] --cpu " +
                std::to_string(ctx.dut_cpu());
    t.columns = {
        {"seed_gain", "seed gain", ColumnKind::gain, "%"},
        {"per_packet", "vnetd tx_batch 0", ColumnKind::ours, "Mpps"},
        {"batched", "vnetd tx_batch 64", ColumnKind::ours, "Mpps"},
        {"gain", "vnetd gain", ColumnKind::gain, "%"},
        {"dpdk", "DPDK net_vhost->net_tap", ColumnKind::peer, "Mpps"},
        {"vs_peer", "vnetd 64 / DPDK", ColumnKind::ratio, "x"},
    };
    const Variant variants[] = {
        {"plain", "plain tap", TapProgram::none, 0},
        {"drop", "native XDP_DROP on the tap", TapProgram::drop, 44.8},
        {"redirect", "XDP_REDIRECT to a second tap (its reader counts)", TapProgram::redirect, 29},
    };
    for (const Variant& v : variants) {
        t.add_row(v.key, v.label);
    }
    t.cell("plain", "seed_gain") = Cell::not_available("the seed published no plain-tap number");
    t.cell("drop", "seed_gain") = Cell::number(44.8);
    t.cell("redirect", "seed_gain") = Cell::number(29);

    run_guarded(t, [&] {
        Netns ns(ctx.netns_name("s3"));
        std::vector<Point> points;
        for (const Variant& v : variants) {
            const bool quick_row = v.program != TapProgram::none;
            points.push_back({v.key, "per_packet", quick_row, [&ctx, &ns, v](nlohmann::json& x) {
                                  return vnetd_point(ctx, ns.name(), v, 0, x);
                              }});
            points.push_back({v.key, "batched", quick_row, [&ctx, &ns, v](nlohmann::json& x) {
                                  return vnetd_point(ctx, ns.name(), v, 64, x);
                              }});
            points.push_back(
                {v.key, "dpdk", v.program == TapProgram::drop,
                 [&ctx, &ns, v](nlohmann::json& x) { return dpdk_point(ctx, ns.name(), v, x); }});
        }
        run_points(ctx, t, points);
    });
    for (const Variant& v : variants) {
        t.cell(v.key, "gain") = gain_cell(t.cell(v.key, "batched"), t.cell(v.key, "per_packet"));
        t.cell(v.key, "vs_peer") = ratio_cell(t.cell(v.key, "batched"), t.cell(v.key, "dpdk"));
    }
    t.notes.emplace_back(
        "seed: 2018 series, testpmd txonly in a guest through vhost_net to a tap; its gains are "
        "batched vs per-packet vhost_net on the same tap, here vnetd --tx-batch 64 vs 0.");
    t.notes.emplace_back(
        "DPDK instances run with --no-huge (memfd); the second tap's reader runs "
        "on CPU " +
        std::to_string(ctx.load_cpu()) + " next to the generator.");
    return t;
}

}  // namespace vnet::bench
