// switchscale: vnetd's cost per packet as the switch grows, from 2 to 16
// ports (the extra ones connected, silent guests) and from 10 to 10,000
// learned MACs (the sender cycles its source MAC through that many). The
// cost is vnetd's worker time in rounds that moved packets (its Prometheus
// counter vnetd_worker_busy_seconds_total) over the packets the receiver
// got in the same window: what switching costs, whatever the mode spends
// waiting. The peers are not in this table: their polling threads are
// always busy, so their time says nothing per packet.
// Issue 9's target: <= 1.1x growth from the smallest switch.
#include <vector>

#include "experiments/experiments.hpp"
#include "experiments/vm_pair.hpp"
#include "harness/interrupt.hpp"

namespace vnet::bench {
namespace {

struct Size {
    const char* key;
    const char* label;
    int ports;
    uint32_t macs;
    const char* baseline;  // the row its growth is measured against
    bool in_quick;
};
constexpr Size kSizes[] = {
    {"ports-2", "2 ports, 10 MACs", 2, 10, "ports-2", true},
    {"ports-4", "4 ports, 10 MACs", 4, 10, "ports-2", false},
    {"ports-8", "8 ports, 10 MACs", 8, 10, "ports-2", false},
    {"ports-16", "16 ports, 10 MACs", 16, 10, "ports-2", true},
    {"macs-100", "2 ports, 100 MACs", 2, 100, "ports-2", false},
    {"macs-1000", "2 ports, 1,000 MACs", 2, 1000, "ports-2", false},
    {"macs-10000", "2 ports, 10,000 MACs", 2, 10000, "ports-2", true},
};
// The sender's source MACs start here (never a guest's own).
constexpr const char* kSourceMacBase = "02:00:00:10:00:00";
constexpr uint32_t kMacTableSize = 16384;

double measure(BenchContext& ctx, Table& t, const Size& size, nlohmann::json& extra) {
    const std::string label = std::string("scale-") + size.key;
    SwitchSystemSpec spec;
    spec.kind = SwitchKind::vnetd_switch;
    spec.ports = size.ports;
    spec.metrics = true;
    spec.mac_table_size = kMacTableSize;
    std::unique_ptr<SwitchSystem> system = start_switch_system(ctx, label, spec);
    std::vector<std::unique_ptr<PktgenGuest>> silent;
    for (int p = 2; p < size.ports; ++p) {
        announce_mac(ctx, system->socket_path(p), guest_mac(p));
        silent.push_back(
            start_silent_guest(ctx, *system, p, label + "-silent" + std::to_string(p)));
    }
    VmPairSpec pair_spec;
    pair_spec.sender_cpu = pair_spec.receiver_cpu = ctx.load_cpu();
    pair_spec.src_mac = kSourceMacBase;
    pair_spec.src_mac_count = size.macs;
    VmPair pair(ctx, *system, label, pair_spec);
    sleep_for(ctx.warmup_seconds());
    const double busy0 = system->worker_busy_seconds().value_or(0);
    const CounterSample rx0 = pair.receiver().packet_sample();
    sleep_for(ctx.point_seconds());
    const double busy1 = system->worker_busy_seconds().value_or(0);
    const CounterSample rx1 = pair.receiver().packet_sample();
    if (std::string why = pair.failure(); !why.empty()) {
        throw MeasureError(why);
    }
    const uint64_t packets = rx1.count - rx0.count;
    if (packets == 0 || rx1.at_s <= rx0.at_s) {
        throw MeasureError("no packets reached the receiver in the window");
    }
    pair.finish();
    for (auto& g : silent) {
        g->finish();
    }
    const nlohmann::json counters = system->finish();
    extra["system"] = counters;
    extra["busy_s"] = busy1 - busy0;
    extra["packets"] = packets;
    t.cell(size.key, "mpps").add_sample(static_cast<double>(packets) / (rx1.at_s - rx0.at_s) / 1e6);
    const uint64_t learned = counters.value("mac_entries", 0);
    if (learned < size.macs) {
        throw MeasureError("the switch holds " + std::to_string(learned) + " MACs, fewer than " +
                           std::to_string(size.macs));
    }
    return (busy1 - busy0) * 1e9 / static_cast<double>(packets);
}

}  // namespace

Table run_switchscale(BenchContext& ctx) {
    Table t;
    t.id = "switchscale";
    t.title = "vnetd switch: worker ns per packet as ports and learned MACs grow, 64 B";
    t.unit = "ns";
    t.command = "vnet-pktgen --tx [--src-mac-count N] (CPU " + std::to_string(ctx.load_cpu()) +
                ") -> vnetd switch (CPU " + std::to_string(ctx.dut_cpu()) +
                ", --metrics-address) -> vnet-pktgen --rx; extra ports: silent vnet-pktgen --rx";
    t.columns = {
        {"ns_per_packet", "vnetd worker busy ns / packet", ColumnKind::ours, "ns"},
        {"growth", "cost / the 2-port, 10-MAC switch's", ColumnKind::ratio, "x"},
        {"mpps", "rate at the receiver", ColumnKind::info, "Mpps"},
    };
    for (const Size& s : kSizes) {
        t.add_row(s.key, s.label);
    }
    run_guarded(t, [&] {
        std::vector<Point> points;
        for (const Size& s : kSizes) {
            points.push_back({s.key, "ns_per_packet", s.in_quick,
                              [&ctx, &t, s](nlohmann::json& x) { return measure(ctx, t, s, x); }});
        }
        run_points(ctx, t, points);
    });
    for (const Size& s : kSizes) {
        t.cell(s.key, "growth") =
            std::string(s.key) == s.baseline
                ? Cell::not_available("the baseline")
                : ratio_cell(t.cell(s.key, "ns_per_packet"), t.cell(s.baseline, "ns_per_packet"));
        if (!t.cell(s.key, "mpps").has_number()) {
            t.cell(s.key, "mpps") = Cell::not_available(t.cell(s.key, "ns_per_packet").na_reason());
        }
    }
    t.notes.emplace_back(
        "issue 9's target: growth <= 1.1 from 2 to 16 ports and from 10 to 10,000 MACs.");
    return t;
}

}  // namespace vnet::bench
