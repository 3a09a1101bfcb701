// portadd: a vhost-user port added at run time, from the command to its
// socket listening (vnetctl port add vs ovs-vsctl add-port), then removed
// (port del / del-port), N times while a -> b runs at full rate on two
// other ports of the same switch; a -> b's rate during the cycles against
// its rate just before them.
#include <algorithm>
#include <chrono>
#include <vector>

#include "experiments/experiments.hpp"
#include "experiments/vm_pair.hpp"
#include "harness/interrupt.hpp"
#include "harness/socket_wait.hpp"

namespace vnet::bench {
namespace {

struct System {
    const char* key;
    const char* label;
    SwitchKind kind;
    bool peer;
};
constexpr System kSystems[] = {
    {"vnetd", "vnetd: vnetctl port add / port del", SwitchKind::vnetd_switch, false},
    {"ovs", "OVS-DPDK: ovs-vsctl add-port / del-port", SwitchKind::ovs_normal, true},
};

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
    return v[i];
}

double measure(BenchContext& ctx, Table& t, const System& sys, nlohmann::json& extra) {
    const int cycles = ctx.quick() ? 10 : 100;
    const std::string label = std::string("portadd-") + sys.key;
    SwitchSystemSpec spec;
    spec.kind = sys.kind;
    std::unique_ptr<SwitchSystem> system = start_switch_system(ctx, label, spec);
    VmPairSpec pair_spec;
    pair_spec.sender_cpu = pair_spec.receiver_cpu = ctx.load_cpu();
    VmPair pair(ctx, *system, label, pair_spec);
    const double before = pair.receive_rate();
    std::vector<double> add_ms, del_ms;
    const CounterSample rx0 = pair.receiver().packet_sample();
    for (int i = 0; i < cycles; ++i) {
        const std::string name = "p" + std::to_string(i);
        auto t0 = std::chrono::steady_clock::now();
        const std::string path = system->add_port(name);
        while (!is_socket(path)) {
            if (seconds_since(t0) > 10) {
                throw MeasureError(name + ": no socket at " + path + " 10 s after the add");
            }
            sleep_for(0.0002);
        }
        add_ms.push_back(seconds_since(t0) * 1e3);
        t0 = std::chrono::steady_clock::now();
        system->del_port(name);
        del_ms.push_back(seconds_since(t0) * 1e3);
    }
    sleep_for(0.2);  // the receiver's next totals line
    const CounterSample rx1 = pair.receiver().packet_sample();
    if (std::string why = pair.failure(); !why.empty()) {
        throw MeasureError(why);
    }
    const double during = static_cast<double>(rx1.count - rx0.count) / (rx1.at_s - rx0.at_s);
    pair.finish();
    extra["system"] = system->finish();
    extra["add_ms"] = add_ms;
    t.cell(sys.key, "add_p99_ms").add_sample(percentile(add_ms, 0.99));
    t.cell(sys.key, "del_median_ms").add_sample(percentile(del_ms, 0.5));
    t.cell(sys.key, "rate_before").add_sample(before / 1e6);
    t.cell(sys.key, "rate_during").add_sample(during / 1e6);
    return percentile(add_ms, 0.5);
}

}  // namespace

Table run_portadd(BenchContext& ctx) {
    Table t;
    t.id = "portadd";
    t.title = "vhost-user port add at run time: command to socket listening, ms; a -> b meanwhile";
    t.unit = "ms";
    t.command =
        "100 x (port add; wait for the socket; port del) while vnet-pktgen a -> b runs "
        "(64 B, CPU " +
        std::to_string(ctx.load_cpu()) + ") through the same switch (CPU " +
        std::to_string(ctx.dut_cpu()) + ")";
    t.columns = {
        {"add_median_ms", "add, median", ColumnKind::ours, "ms"},
        {"add_p99_ms", "add, p99", ColumnKind::info, "ms"},
        {"del_median_ms", "del, median", ColumnKind::info, "ms"},
        {"rate_before", "a -> b before, Mpps", ColumnKind::info, "Mpps"},
        {"rate_during", "a -> b during the cycles, Mpps", ColumnKind::info, "Mpps"},
        {"during_vs_before", "during / before", ColumnKind::ratio, "x"},
    };
    for (const System& s : kSystems) {
        t.add_row(s.key, s.label, s.peer);
    }
    run_guarded(t, [&] {
        std::vector<Point> points;
        for (const System& sys : kSystems) {
            points.push_back(
                {sys.key, "add_median_ms", !sys.peer,
                 [&ctx, &t, sys](nlohmann::json& x) { return measure(ctx, t, sys, x); }});
        }
        run_points(ctx, t, points);
    });
    for (const System& s : kSystems) {
        for (const char* c : {"add_p99_ms", "del_median_ms", "rate_before", "rate_during"}) {
            if (!t.cell(s.key, c).has_number()) {
                t.cell(s.key, c) = Cell::not_available(t.cell(s.key, "add_median_ms").na_reason());
            }
        }
        t.cell(s.key, "during_vs_before") =
            ratio_cell(t.cell(s.key, "rate_during"), t.cell(s.key, "rate_before"));
    }
    t.notes.emplace_back(
        "The add is timed from the command's start to the socket existing (vnetd binds under a "
        "private name and renames, so the path appears listening); the del until the command "
        "returned.");
    return t;
}

}  // namespace vnet::bench
