// switchhol: no head-of-line blocking. Four guests on one switch: a -> b is
// the flow measured, d -> c a second flow whose receiver c stalls (SIGSTOP:
// it stops taking frames, its RX ring fills). In vnetd the stalled
// destination holds d's burst for destination_hold_us (100 us), then drops
// it as `destination_full`; a's frames to b must keep their rate. OVS-DPDK
// drops at a full ring at once. Both senders are paced (kFlowPps each, well
// under what any switch here forwards), so a -> b's rate is the same in
// both rows unless the stall slows it: the guests share the load CPU, and
// an unpaced a would only gain the CPU that the stopped c leaves. Rows:
// both flows healthy, c stalled, and the ratio; the senders at SCHED_IDLE.
#include <signal.h>

#include <vector>

#include "experiments/experiments.hpp"
#include "experiments/vm_pair.hpp"

namespace vnet::bench {
namespace {

constexpr uint64_t kFlowPps = 300000;

struct System {
    const char* column;
    const char* loss_column;
    const char* title;
    SwitchKind kind;
};
constexpr System kSystems[] = {
    {"vnetd", "vnetd_loss", "vnetd switch (adaptive)", SwitchKind::vnetd_switch},
    {"ovs_normal", "ovs_loss", "OVS-DPDK NORMAL", SwitchKind::ovs_normal},
};

double measure(BenchContext& ctx, Table& t, const System& sys, bool stall, nlohmann::json& extra) {
    const std::string label = std::string("hol-") + sys.column + (stall ? "-stalled" : "-healthy");
    SwitchSystemSpec spec;
    spec.kind = sys.kind;
    spec.ports = 4;
    std::unique_ptr<SwitchSystem> system = start_switch_system(ctx, label, spec);
    VmPairSpec main_flow;
    main_flow.sender_cpu = main_flow.receiver_cpu = ctx.load_cpu();
    main_flow.rate_pps = kFlowPps;
    VmPairSpec side_flow = main_flow;
    side_flow.from = 2;
    side_flow.to = 3;
    VmPair side(ctx, *system, label + "-dc", side_flow);
    VmPair flow(ctx, *system, label + "-ab", main_flow);
    if (stall) {
        kill(side.receiver().pid(), SIGSTOP);
    }
    const double rate = flow.receive_rate();
    if (stall) {
        kill(side.receiver().pid(), SIGCONT);
    }
    const VmPairTotals a = flow.finish();
    const VmPairTotals d = side.finish();
    extra["a_to_b"] = {{"sent", a.sent}, {"received", a.received}, {"loss_pct", a.loss_pct}};
    extra["d_to_c"] = {{"sent", d.sent}, {"received", d.received}, {"loss_pct", d.loss_pct}};
    extra["system"] = system->finish();
    t.cell(stall ? "stalled" : "healthy", sys.loss_column).add_sample(a.loss_pct);
    return rate / 1e6;
}

}  // namespace

Table run_switchhol(BenchContext& ctx) {
    Table t;
    t.id = "switchhol";
    t.title =
        "a -> b while d -> c's receiver stalls (no head-of-line blocking), both paced at 0.3 "
        "Mpps, Mpps at b, 64 B";
    t.unit = "Mpps";
    t.command = "4 x vnet-pktgen on CPU " + std::to_string(ctx.load_cpu()) +
                " (senders SCHED_IDLE), switch on CPU " + std::to_string(ctx.dut_cpu()) +
                "; c SIGSTOPped for the stalled row";
    for (const System& s : kSystems) {
        t.columns.push_back(
            {s.column, s.title,
             s.kind == SwitchKind::vnetd_switch ? ColumnKind::ours : ColumnKind::peer, "Mpps"});
    }
    t.columns.push_back({"vs_ovs", "vnetd / OVS NORMAL", ColumnKind::ratio, "x"});
    for (const System& s : kSystems) {
        t.columns.push_back(
            {s.loss_column, std::string(s.title) + ": a -> b lost %", ColumnKind::info, "%"});
    }
    t.add_row("healthy", "both flows running");
    t.add_row("stalled", "c stalled (SIGSTOP)");
    t.add_row("stalled_vs_healthy", "stalled / healthy");
    run_guarded(t, [&] {
        std::vector<Point> points;
        for (const System& sys : kSystems) {
            const bool quick = sys.kind == SwitchKind::vnetd_switch;
            for (const bool stall : {false, true}) {
                points.push_back({stall ? "stalled" : "healthy", sys.column, quick,
                                  [&ctx, &t, sys, stall](nlohmann::json& x) {
                                      return measure(ctx, t, sys, stall, x);
                                  }});
            }
        }
        run_points(ctx, t, points);
    });
    for (const System& s : kSystems) {
        t.cell("stalled_vs_healthy", s.column) =
            ratio_cell(t.cell("stalled", s.column), t.cell("healthy", s.column));
    }
    for (const char* r : {"healthy", "stalled"}) {
        t.cell(r, "vs_ovs") = ratio_cell(t.cell(r, "vnetd"), t.cell(r, "ovs_normal"));
    }
    t.cell("stalled_vs_healthy", "vs_ovs") = Cell::not_applicable();
    for (const System& s : kSystems) {
        t.cell("stalled_vs_healthy", s.loss_column) = Cell::not_applicable();
        for (const char* r : {"healthy", "stalled"}) {
            if (!t.cell(r, s.loss_column).has_number()) {
                t.cell(r, s.loss_column) = Cell::not_available(t.cell(r, s.column).na_reason());
            }
        }
    }
    t.notes.emplace_back(
        "The target: a -> b keeps its rate when c stalls (stalled / healthy near 1). The row "
        "JSON has both flows' sent/received and the switch's drops by reason "
        "(destination_full: what was meant for c).");
    return t;
}

}  // namespace vnet::bench
