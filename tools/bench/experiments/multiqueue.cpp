// multiqueue: testpmd virtio-user txonly with 1, 2 and 4 queue pairs ->
// vnetd -> a multiqueue tap (one tap queue per queue pair), vnetd with one
// worker (on the CPU under test) and with two (the second shares the load
// CPU with the generator: on 2 cores there is no third). Rate at the tap
// (rx_packets + rx_dropped), and each queue pair's share of vnetd's packets.
//
// What it can show here: that queue pairs are served and spread (the share
// column), what the per-queue overhead costs one worker, and what a second
// worker buys when it has to share a CPU with the generator. What it cannot
// show on 2 cores: scaling with cores, which needs a CPU per worker plus the
// generator's.

#include <memory>

#include "experiments/experiments.hpp"
#include "experiments/guest_to_tap.hpp"
#include "experiments/txonly_front_end.hpp"
#include "harness/netns.hpp"
#include "harness/rate_meter.hpp"
#include "harness/testpmd_instance.hpp"
#include "harness/vnetd_instance.hpp"

namespace vnet::bench {
namespace {

struct Layout {
    const char* key;
    const char* label;
    int queue_pairs;
    int workers;
    bool in_quick;
};

// Each queue pair's share of the VM port's received packets, "q0 0.50 q1 0.50".
std::string queue_shares(const nlohmann::json& stats, int queue_pairs) {
    std::vector<uint64_t> per_queue(queue_pairs, 0);
    uint64_t total = 0;
    for (const auto& port : stats.value("ports", nlohmann::json::array())) {
        if (port.value("name", "") != "vm0") {
            continue;
        }
        for (const auto& q : port.value("queues", nlohmann::json::array())) {
            const int index = q.value("queue", 0);
            if (index < queue_pairs) {
                per_queue[index] = q["rx"].value("packets", uint64_t{0});
                total += per_queue[index];
            }
        }
    }
    std::string out;
    for (int q = 0; q < queue_pairs; ++q) {
        char share[32];
        std::snprintf(share, sizeof(share), "%sq%d %.2f", out.empty() ? "" : " ", q,
                      total ? double(per_queue[q]) / double(total) : 0.0);
        out += share;
    }
    return out;
}

double point(BenchContext& ctx, const std::string& netns, const Layout& l, nlohmann::json& extra) {
    const std::string label = std::string("mq-") + l.key;
    const std::string sock = ctx.fresh_socket_path(label);
    const std::string tap = ctx.fresh_ifname("q");
    std::vector<std::string> args{
        "--socket-path", sock, "--tap", tap, "--queue-pairs", std::to_string(l.queue_pairs)};
    if (l.workers == 2) {
        // VnetdInstance pins the process and one worker to the CPU under
        // test; the second worker goes to the load CPU.
        args.insert(args.end(), {"--cpu", std::to_string(ctx.load_cpu())});
    }
    VnetdInstance vnetd(ctx, label, args, netns);
    vnetd.wait_for_socket(sock);
    vnetd.wait_for_link(tap);
    link_up(netns, tap);
    // testpmd's forwarding lcore serves every queue of the port, on the load CPU.
    TxonlyFrontEnd front_end;
    front_end.queues = l.queue_pairs;
    front_end.total_mbufs = 65536;
    TapRxCounter count(netns, tap);
    const double mpps = measure_with_txonly_front_end(ctx, label, sock, front_end,
                                                      sampled_when_read(std::ref(count)),
                                                      [&] { return vnetd.failure(); });
    const nlohmann::json stats = vnetd.stop();
    extra["vnetd"] = vnetd_counters_summary(stats);
    extra["queue_shares"] = queue_shares(stats, l.queue_pairs);
    return mpps;
}

}  // namespace

Table run_multiqueue(BenchContext& ctx) {
    Table t;
    t.id = "multiqueue";
    t.title = "testpmd virtio-user txonly, N queue pairs -> vnetd -> multiqueue tap, 64 B, Mpps";
    t.unit = "Mpps";
    t.command =
        "dpdk-testpmd --vdev net_virtio_user0,queues=N --rxq=N --txq=N "
        "--forward-mode=txonly (CPU " +
        std::to_string(ctx.load_cpu()) + ") -> vnetd --tap T --queue-pairs N --cpu " +
        std::to_string(ctx.dut_cpu()) + " [--cpu " + std::to_string(ctx.load_cpu()) +
        "] -> tap with N queues";
    t.columns = {
        {"mpps", "vnetd", ColumnKind::ours, "Mpps"},
        {"vs_one", "vs 1 queue pair, 1 worker", ColumnKind::ratio, "x"},
    };
    const Layout layouts[] = {
        {"q1-w1", "1 queue pair, 1 worker", 1, 1, true},
        {"q2-w1", "2 queue pairs, 1 worker", 2, 1, true},
        {"q4-w1", "4 queue pairs, 1 worker", 4, 1, false},
        {"q2-w2", "2 queue pairs, 2 workers (one beside the generator)", 2, 2, true},
        {"q4-w2", "4 queue pairs, 2 workers (one beside the generator)", 4, 2, false},
    };
    for (const Layout& l : layouts) {
        t.add_row(l.key, l.label);
    }
    run_guarded(t, [&] {
        Netns ns(ctx.netns_name("mq"));
        std::vector<Point> points;
        for (const Layout& l : layouts) {
            points.push_back({l.key, "mpps", l.in_quick, [&ctx, &ns, l](nlohmann::json& x) {
                                  return point(ctx, ns.name(), l, x);
                              }});
        }
        run_points(ctx, t, points);
    });
    for (const Layout& l : layouts) {
        t.cell(l.key, "vs_one") = ratio_cell(t.cell(l.key, "mpps"), t.cell("q1-w1", "mpps"));
    }
    t.notes.emplace_back(
        "2 cores: the generator's forwarding lcore has the load CPU; a second vnetd worker shares "
        "it, so the 2-worker rows show sharing, not scaling. Each row's JSON has vnetd's "
        "per-queue-pair share of the packets (queue_shares).");
    return t;
}

}  // namespace vnet::bench
