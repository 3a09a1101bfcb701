// guestrx: tap -> guest, the guest's RX path. The rate is what a tap's
// reader takes from it: the raw read() loop (the ceiling of any user-space
// reader on one core), vnetd into a guest's RX ring, and DPDK testpmd
// net_tap -> net_vhost into the same guest.
//
// The sender must not be the limit, and on 2 cores it shares one with the
// guest. So frames do not come from the stack or AF_PACKET (about 2 Mpps
// per core here) but from tap_write_limit writing one prebuilt frame into a
// source tap S whose native XDP program redirects every frame to the
// measured tap A (a devmap: tun_xdp_xmit queues the frame on A's reader
// queue with no skb built). That writer reaches 6-7 Mpps, above any reader
// measured here. It runs at SCHED_IDLE on the load CPU next to the guest
// (vnet-pktgen --rx, which sleeps on its call eventfd when its ring is
// idle), so it only takes what the guest leaves; the reader runs alone on
// the CPU under test. Frames the reader could not take are tap A's
// tx_dropped, reported next to the rate: drops mean the sender outran the
// reader, i.e. the reader was measured at its limit.
#include <unistd.h>

#include <memory>

#include "experiments/experiments.hpp"
#include "harness/cpu_busy.hpp"
#include "harness/link_stats.hpp"
#include "harness/netns.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"
#include "harness/tap_reader.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"
#include "harness/xdp_redirect_map.hpp"

namespace vnet::bench {
namespace {

using Measure = decltype(Point::measure);

// The source: tap_write_limit into a fresh tap S with xdp_redirect attached
// (native), pointed at `target`. Runs until stopped.
class RedirectingSender {
public:
    RedirectingSender(BenchContext& ctx, const std::string& netns, const std::string& label,
                      const std::string& target, int frame_size)
        : netns_(netns), source_(ctx.fresh_ifname("s")) {
        ProcessSpec spec;
        spec.name = "tap_write_limit (sender) " + label;
        const double run_s = ctx.warmup_seconds() + ctx.point_seconds() + 60;
        spec.argv = {"chrt",
                     "--idle",
                     "0",
                     ctx.tools().tap_write_limit,
                     "-k",
                     "-i",
                     source_,
                     "-s",
                     std::to_string(frame_size),
                     "-c",
                     std::to_string(ctx.load_cpu()),
                     "-d",
                     std::to_string(static_cast<int>(run_s)),
                     "-x",
                     ctx.tools().xdp_redirect};
        spec.netns = netns;
        spec.cpu = ctx.load_cpu();
        spec.output_path = ctx.log_path("sender-" + label + ".log");
        process_ = ChildProcess(spec);
        wait_for_link(netns, source_);
        // The program is attached by the writer just after it opens S: wait
        // for it, then fill its devmap (frames pass to the stack until then).
        std::string last_error;
        for (int i = 0; i < 100; ++i) {
            try {
                point_xdp_redirect_map(netns, source_, target);
                return;
            } catch (const std::exception& e) {
                last_error = e.what();
            }
            if (!process_.running()) {
                break;
            }
            usleep(50 * 1000);
        }
        throw MeasureError("the sender's redirect never pointed at " + target + ": " + last_error +
                           " (" + last_line_of(process_.output_path()) + ")");
    }
    ~RedirectingSender() { process_.stop(SIGTERM, 5); }
    RedirectingSender(const RedirectingSender&) = delete;
    RedirectingSender& operator=(const RedirectingSender&) = delete;

    std::string failure() {
        return process_.running() ? "" : "sender exited: " + last_line_of(process_.output_path());
    }

private:
    std::string netns_;
    std::string source_;
    ChildProcess process_;
};

// One row: the frame size and the guest's ring format.
struct RowSpec {
    int size;
    bool packed;
    std::string key() const { return std::to_string(size) + (packed ? "-packed" : "-split"); }
    std::string label() const { return std::to_string(size) + " B" + (packed ? " packed" : ""); }
    // The split row of the same size: the packed rows compare with it.
    std::string split_key() const { return std::to_string(size) + "-split"; }
};

// The guest: vnet-pktgen receiving on the load CPU at normal priority.
ChildProcess start_guest(BenchContext& ctx, const std::string& label, const std::string& sock,
                         bool packed) {
    ProcessSpec spec;
    spec.name = "vnet-pktgen --rx " + label;
    spec.argv = {ctx.tools().pktgen,
                 "--socket-path",
                 sock,
                 "--rx",
                 "--queue-size",
                 "1024",
                 "--stats-interval",
                 "0",
                 "--connect-timeout",
                 "15"};
    if (packed) {
        spec.argv.push_back("--packed");
    }
    spec.cpu = ctx.load_cpu();
    spec.output_path = ctx.log_path("guest-" + label + ".log");
    return ChildProcess(spec);
}

// Frames tap A's reader took (tx_packets), over the window, in Mpps; the
// frames it could not take go to extra["tap_tx_dropped_fraction"]. The
// reader runs alone on the DUT CPU, so that CPU's busy time over the same
// window is the reader's cost: extra["dut_busy_fraction"] and
// extra["ns_per_packet"] (busy CPU time per frame taken). A reader that
// counts its own work time (`work_seconds`, vnetd's workers) also gets
// extra["work_ns_per_packet"]: its CPU less the time it spun waiting.
double measure_reader(BenchContext& ctx, const std::string& netns, const std::string& tap,
                      const std::function<std::string()>& alive, nlohmann::json& extra,
                      const std::function<double()>& work_seconds = {}) {
    LinkStatsReader reader(netns);
    auto read = [&] {
        auto s = reader.read(tap);
        if (!s) {
            throw MeasureError("cannot read the counters of " + tap);
        }
        return *s;
    };
    RateWindow window;
    window.warmup_s = ctx.warmup_seconds();
    window.window_s = ctx.point_seconds();
    // measure_rate's last two counter reads are the window's edges: keep the
    // CPU's busy time and the count at the last two reads.
    struct Sample {
        uint64_t frames;
        double busy_s;
        double work_s;
    };
    Sample edges[2] = {};
    const LinkStats before_flow = read();
    const double rate = measure_rate(
        [&] {
            const uint64_t frames = read().tx_packets;
            edges[0] = edges[1];
            edges[1] = {frames, cpu_busy_seconds(ctx.dut_cpu()),
                        work_seconds ? work_seconds() : 0.0};
            return frames;
        },
        window, alive);
    const LinkStats after = read();
    const uint64_t taken = after.tx_packets - before_flow.tx_packets;
    const uint64_t dropped = after.tx_dropped - before_flow.tx_dropped;
    extra["tap_tx_dropped_fraction"] =
        taken + dropped == 0 ? 0.0 : static_cast<double>(dropped) / double(taken + dropped);
    const double busy_s = edges[1].busy_s - edges[0].busy_s;
    const uint64_t frames = edges[1].frames - edges[0].frames;
    extra["dut_busy_fraction"] = busy_s / ctx.point_seconds();
    if (frames > 0) {
        extra["ns_per_packet"] = busy_s * 1e9 / static_cast<double>(frames);
        if (work_seconds) {
            const double work_s = edges[1].work_s - edges[0].work_s;
            extra["work_fraction"] = work_s / ctx.point_seconds();
            extra["work_ns_per_packet"] = work_s * 1e9 / static_cast<double>(frames);
        }
    }
    return rate / 1e6;
}

double raw_point(BenchContext& ctx, const std::string& netns, int size, nlohmann::json& extra) {
    const std::string label = "grx-raw-" + std::to_string(size);
    TapReader reader(netns, ctx.fresh_ifname("a"), ctx.dut_cpu());
    RedirectingSender sender(ctx, netns, label, reader.ifname(), size);
    return measure_reader(
        ctx, netns, reader.ifname(), [&] { return sender.failure(); }, extra);
}

// The guest, the sender and the measurement, once a back end (vnetd or
// testpmd) serves `sock` and reads `tap`. Stops the guest afterwards.
double measure_with_guest(BenchContext& ctx, const std::string& netns, const std::string& label,
                          const std::string& sock, const std::string& tap, const RowSpec& row,
                          const std::function<std::string()>& backend_failure,
                          nlohmann::json& extra, const std::function<double()>& work_seconds = {}) {
    ChildProcess guest = start_guest(ctx, label, sock, row.packed);
    RedirectingSender sender(ctx, netns, label, tap, row.size);
    const double mpps = measure_reader(
        ctx, netns, tap,
        [&]() -> std::string {
            if (std::string why = backend_failure(); !why.empty()) {
                return why;
            }
            if (!guest.running()) {
                return "vnet-pktgen exited: " + last_line_of(guest.output_path());
            }
            return sender.failure();
        },
        extra, work_seconds);
    guest.stop(SIGINT, 5);
    return mpps;
}

double vnetd_point(BenchContext& ctx, const std::string& netns, const RowSpec& row,
                   nlohmann::json& extra) {
    const std::string label = "grx-vnetd-" + row.key();
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("a");
    const std::string control = ctx.fresh_socket_path(label + "-ctl");
    VnetdInstance vnetd(ctx, label,
                        {"--socket-path", sock, "--tap", tap, "--control-socket", control}, netns);
    vnetd.wait_for_socket(sock);
    vnetd.wait_for_link(tap);
    link_up(netns, tap);
    const double mpps = measure_with_guest(
        ctx, netns, label, sock, tap, row, [&] { return vnetd.failure(); }, extra,
        [&] { return vnetd_workers_busy_seconds(ctx, control); });
    extra["vnetd"] = vnetd_counters_summary(vnetd.stop());
    return mpps;
}

double dpdk_point(BenchContext& ctx, const std::string& netns, const RowSpec& row,
                  nlohmann::json& extra) {
    const std::string label = "grx-dpdk-" + row.key();
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("d");
    TestpmdInstance pmd(ctx, testpmd_vhost_to_tap(ctx, label, sock, tap, netns));
    pmd.wait_for_log("binding succeeded|socket created");
    wait_for_link(netns, tap);
    link_up(netns, tap);
    const double mpps = measure_with_guest(
        ctx, netns, label, sock, tap, row, [&] { return pmd.failure(); }, extra);
    pmd.stop();
    extra["testpmd_log"] = pmd.log_path();
    return mpps;
}

}  // namespace

Table run_guestrx(BenchContext& ctx) {
    Table t;
    t.id = "guestrx";
    t.title = "tap -> guest RX, Mpps taken from the tap";
    t.unit = "Mpps";
    t.command =
        "chrt --idle 0 tap_write_limit -k -x xdp_redirect.bpf.o (devmap -> tap A, CPU " +
        std::to_string(ctx.load_cpu()) + ") ; reader of A on CPU " + std::to_string(ctx.dut_cpu()) +
        ": raw read() loop | vnetd --tap A -> vnet-pktgen --rx [--packed] | testpmd net_tap "
        "io net_vhost -> vnet-pktgen --rx [--packed] (guest on CPU " +
        std::to_string(ctx.load_cpu()) + ")";
    t.columns = {
        {"raw", "raw read() loop", ColumnKind::peer, "Mpps"},
        {"vnetd", "vnetd", ColumnKind::ours, "Mpps"},
        {"dpdk", "DPDK net_tap->net_vhost", ColumnKind::peer, "Mpps"},
        {"vs_raw", "vnetd / raw", ColumnKind::ratio, "x"},
        {"vs_dpdk", "vnetd / DPDK", ColumnKind::ratio, "x"},
        {"raw_ns", "raw CPU ns/pkt", ColumnKind::info, "ns"},
        {"vnetd_ns", "vnetd CPU ns/pkt", ColumnKind::info, "ns"},
        {"dpdk_ns", "DPDK CPU ns/pkt", ColumnKind::info, "ns"},
        {"cpu_vs_raw", "vnetd / raw per CPU", ColumnKind::ratio, "x"},
        {"vnetd_work_ns", "vnetd work ns/pkt", ColumnKind::info, "ns"},
        {"work_vs_raw", "vnetd work / raw per CPU", ColumnKind::ratio, "x"},
        {"vnetd_packed_vs_split", "vnetd packed / split", ColumnKind::ratio, "x"},
        {"dpdk_packed_vs_split", "DPDK packed / split", ColumnKind::ratio, "x"},
    };
    const RowSpec rows[] = {{64, false}, {1500, false}, {64, true}, {1500, true}};
    for (const RowSpec& r : rows) {
        t.add_row(r.key(), r.label());
    }
    run_guarded(t, [&] {
        Netns ns(ctx.netns_name("grx"));
        std::vector<Point> points;
        for (const RowSpec& spec : rows) {
            const std::string row = spec.key();
            const bool quick_row = spec.size == 64;
            // Each point also records its reader's CPU time per frame in
            // the matching "_ns" column, and vnetd its work per frame (same
            // repeat, same window).
            auto with_cpu = [&t, row](const char* ns_column, Measure measure) {
                return also_record(
                    t, row, ns_column, "ns_per_packet",
                    also_record(t, row, "vnetd_work_ns", "work_ns_per_packet", std::move(measure)));
            };
            // The raw loop has no guest ring: the packed rows use the split
            // row's ceiling.
            if (!spec.packed) {
                points.push_back({row, "raw", quick_row,
                                  with_cpu("raw_ns", [&ctx, &ns, spec](nlohmann::json& x) {
                                      return raw_point(ctx, ns.name(), spec.size, x);
                                  })});
            }
            points.push_back({row, "vnetd", quick_row,
                              with_cpu("vnetd_ns", [&ctx, &ns, spec](nlohmann::json& x) {
                                  return vnetd_point(ctx, ns.name(), spec, x);
                              })});
            points.push_back(
                {row, "dpdk", quick_row, with_cpu("dpdk_ns", [&ctx, &ns, spec](nlohmann::json& x) {
                     return dpdk_point(ctx, ns.name(), spec, x);
                 })});
        }
        run_points(ctx, t, points);
    });
    for (const RowSpec& spec : rows) {
        const std::string row = spec.key();
        const std::string split = spec.split_key();
        if (spec.packed) {
            const char* why = "no guest ring: the split row's raw loop is the ceiling";
            t.cell(row, "raw").set_not_available(why);
            t.cell(row, "raw_ns").set_not_available(why);
            t.cell(row, "vnetd_packed_vs_split") =
                ratio_cell(t.cell(row, "vnetd"), t.cell(split, "vnetd"));
            t.cell(row, "dpdk_packed_vs_split") =
                ratio_cell(t.cell(row, "dpdk"), t.cell(split, "dpdk"));
        } else {
            t.cell(row, "vnetd_packed_vs_split") = Cell::not_available("split is the baseline");
            t.cell(row, "dpdk_packed_vs_split") = Cell::not_available("split is the baseline");
        }
        t.cell(row, "vs_raw") = ratio_cell(t.cell(row, "vnetd"), t.cell(split, "raw"));
        t.cell(row, "vs_dpdk") = ratio_cell(t.cell(row, "vnetd"), t.cell(row, "dpdk"));
        // Cheaper per packet is better: raw's cost over vnetd's.
        t.cell(row, "cpu_vs_raw") = ratio_cell(t.cell(split, "raw_ns"), t.cell(row, "vnetd_ns"));
        t.cell(row, "work_vs_raw") =
            ratio_cell(t.cell(split, "raw_ns"), t.cell(row, "vnetd_work_ns"));
        // A reader's cost is missing for the reason its rate is.
        for (const char* rate : {"raw", "vnetd", "dpdk"}) {
            Cell& cost = t.cell(row, std::string(rate) + "_ns");
            if (!cost.has_number() && !t.cell(row, rate).has_number()) {
                cost.set_not_available(t.cell(row, rate).na_reason());
            }
        }
    }
    t.notes.emplace_back(
        "The sender (a tap write loop with native XDP_REDIRECT into the measured tap) runs at "
        "SCHED_IDLE next to the guest, so it never takes the guest's CPU; the JSON's "
        "tap_tx_dropped_fraction is what the reader could not take (> 0: the sender was not the "
        "limit).");
    t.notes.emplace_back(
        "CPU ns/pkt is the DUT CPU's busy time over the window per frame taken (/proc/stat): the "
        "reader is alone on that CPU. A reader that sleeps while the guest or the sender is "
        "behind shows a rate below its capacity but an honest cost per packet; the JSON's "
        "dut_busy_fraction says how busy it was. DPDK polls, so its cost is 1 / its rate.");
    t.notes.emplace_back(
        "vnetd work ns/pkt is the busy time vnetd's workers count over the same window (vnetctl "
        "worker list: the rounds that moved frames) per frame taken: vnetd's CPU less the time "
        "its adaptive spin waited for frames, where the raw loop sleeps in read(); "
        "work_vs_raw compares it with the loop's CPU per frame.");
    return t;
}

}  // namespace vnet::bench
