// switchgso: VM -> VM 64 KB TCP GSO frames through a learning switch,
// vnet-pktgen --gso (CSUM + HOST_TSO4) -> switch -> vnet-pktgen. Two
// receivers: one that takes the frames whole (GUEST_CSUM + GUEST_TSO4),
// where vnetd copies each frame once into its mergeable RX buffers, and one
// without guest offloads, which vnetd segments in software. OVS-DPDK runs
// with userspace-tso-enable=true (off by default in 3.1, where OVS refuses
// the sender's TSO) and dpdkvhostuserclient ports (the guests listen): OVS
// 3.1 withdraws TSO from its server ports. Gbit/s of frame bytes at the
// receiver; the idle layout.
// Issue 9's target: vnetd >= 3x OVS-DPDK.
#include <vector>

#include "experiments/experiments.hpp"
#include "experiments/vm_pair.hpp"

namespace vnet::bench {
namespace {

constexpr uint32_t kGsoFrameBytes = 65000;

struct System {
    const char* column;
    const char* verified_column;
    const char* title;
    SwitchKind kind;
};
constexpr System kSystems[] = {
    {"vnetd", "vnetd_verified", "vnetd switch (adaptive)", SwitchKind::vnetd_switch},
    {"ovs_normal", "ovs_normal_verified", "OVS-DPDK NORMAL, userspace TSO", SwitchKind::ovs_normal},
};

struct Receiver {
    const char* key;
    const char* label;
    bool gso;
    bool beside_switch;  // on the switch's CPU instead of the sender's
    bool in_quick;
};
constexpr Receiver kReceivers[] = {
    {"whole", "receiver takes TSO frames whole (GUEST_TSO4)", true, false, true},
    // Where the frame the switch wrote is read on the switch's own CPU: the
    // case streaming stores (packet/streaming_copy.hpp) could only lose.
    {"whole-beside", "the same, receiver beside the switch", true, true, false},
    {"segmented", "receiver without guest offloads", false, false, false},
};

double measure(BenchContext& ctx, Table& t, const System& sys, const Receiver& rx,
               nlohmann::json& extra) {
    const std::string label = std::string("gso-") + sys.column + "-" + rx.key;
    SwitchSystemSpec spec;
    spec.kind = sys.kind;
    spec.userspace_tso = true;
    spec.ovs_client_ports = true;
    std::unique_ptr<SwitchSystem> system = start_switch_system(ctx, label, spec);
    VmPairSpec pair_spec;
    pair_spec.frame_bytes = kGsoFrameBytes;
    pair_spec.gso = true;
    pair_spec.receiver_gso = rx.gso;
    pair_spec.sender_cpu = ctx.load_cpu();
    pair_spec.receiver_cpu = rx.beside_switch ? ctx.dut_cpu() : ctx.load_cpu();
    VmPair pair(ctx, *system, label, pair_spec);
    const double bytes_per_s = pair.receive_rate(true);
    const VmPairTotals totals = pair.finish();
    extra["sent_frames"] = totals.sent;
    extra["receiver"] = totals.receiver;
    extra["system"] = system->finish();
    // A frame a guest's stack would reject (its TCP checksum wrong) still
    // counts in Gbit/s; this says how many passed the receiver's checks.
    const uint64_t frames = totals.receiver.value("rx-packets", uint64_t{0});
    if (frames != 0) {
        t.cell(rx.key, sys.verified_column)
            .add_sample(100.0 *
                        static_cast<double>(totals.receiver.value("rx-verified", uint64_t{0})) /
                        static_cast<double>(frames));
    }
    return bytes_per_s * 8 / 1e9;
}

}  // namespace

Table run_switchgso(BenchContext& ctx) {
    Table t;
    t.id = "switchgso";
    t.title = "VM -> VM 64 KB TCP GSO frames through a switch, Gbit/s at the receiver";
    t.unit = "Gbit/s";
    t.command = "vnet-pktgen --tx --gso --size " + std::to_string(kGsoFrameBytes) + " (CPU " +
                std::to_string(ctx.load_cpu()) + ", SCHED_IDLE) -> switch (CPU " +
                std::to_string(ctx.dut_cpu()) + ") -> vnet-pktgen --rx [--gso] (CPU " +
                std::to_string(ctx.load_cpu()) + ", or " + std::to_string(ctx.dut_cpu()) +
                " beside the switch)";
    for (const System& s : kSystems) {
        t.columns.push_back(
            {s.column, s.title,
             s.kind == SwitchKind::vnetd_switch ? ColumnKind::ours : ColumnKind::peer, "Gbit/s"});
    }
    t.columns.push_back({"vs_ovs", "vnetd / OVS", ColumnKind::ratio, "x"});
    for (const System& s : kSystems) {
        t.columns.push_back({s.verified_column, std::string(s.title) + ": frames that verify, %",
                             ColumnKind::info, "%"});
    }
    for (const Receiver& r : kReceivers) {
        t.add_row(r.key, r.label);
    }
    run_guarded(t, [&] {
        std::vector<Point> points;
        for (const Receiver& r : kReceivers) {
            for (const System& sys : kSystems) {
                const bool quick = r.in_quick && sys.kind == SwitchKind::vnetd_switch;
                points.push_back({r.key, sys.column, quick, [&ctx, &t, sys, r](nlohmann::json& x) {
                                      return measure(ctx, t, sys, r, x);
                                  }});
            }
        }
        run_points(ctx, t, points);
    });
    for (const Receiver& r : kReceivers) {
        t.cell(r.key, "vs_ovs") = ratio_cell(t.cell(r.key, "vnetd"), t.cell(r.key, "ovs_normal"));
    }
    t.notes.emplace_back(
        "issue 9's target: vnetd / OVS >= 3. The bytes are the frames' as each receiver sees "
        "them (one 65000-byte frame whole, or its MSS-sized segments), whether or not they "
        "pass the receiver's checks (payload, IP and TCP checksums): the verify columns say how "
        "many did.");
    return t;
}

}  // namespace vnet::bench
