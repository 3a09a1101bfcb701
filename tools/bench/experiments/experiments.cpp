#include "experiments/experiments.hpp"

#include "experiments/latency.hpp"
#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"
#include "harness/process.hpp"
#include "harness/rate_meter.hpp"
#include "report/table_printer.hpp"

namespace vnet::bench {

const std::vector<Experiment>& experiments() {
    static const std::vector<Experiment> all = {
        {"seed004", "guest pktgen -> vnetd -> tap, tx_batch sweep (vhost_net TX batching, 2017)",
         run_seed004},
        {"seed003", "testpmd txonly -> vnetd -> tap with XDP, per-packet vs batched (2018)",
         run_seed003},
        {"seed002", "iperf3 through tap <-> vnetd <-> tap, GRO x IFF_NAPI (2022)", run_seed002},
        {"seed000", "iperf3 -l 64/128/4K, IFF_NAPI off/on (QEMU IFF_NAPI, 2023)", run_seed000},
        {"rawlimit", "the tap-write ceiling (tap_write_limit) and vnetd's share of it",
         run_rawlimit},
        {"guestrx", "tap -> guest RX: vnetd vs the raw read() loop and DPDK net_tap->net_vhost",
         run_guestrx},
        {"multiqueue", "testpmd virtio-user with 1/2/4 queue pairs -> vnetd (1/2 workers) -> tap",
         run_multiqueue},
        {"ringwork", "ring work only: testpmd virtio-user -> vnetd --null vs net_vhost rxonly",
         run_ringwork},
        {"vmswitch", "VM -> VM through a switch: vnetd vs OVS-DPDK NORMAL and testpmd io",
         run_vmswitch},
        {"switchhol", "a -> b while another port's receiver stalls: no head-of-line blocking",
         run_switchhol},
        {"switchgso", "VM -> VM 64 KB TCP GSO frames through a switch, Gbit/s", run_switchgso},
        {"switchscale", "vnetd's cost per packet from 2 to 16 ports, 10 to 10,000 MACs",
         run_switchscale},
        {"switchidle", "CPU of a switch with 4 connected, silent guests", run_switchidle},
        {"portadd", "run-time port add latency and its effect on other ports' traffic",
         run_portadd},
        {"latency", "UDP ping-pong p50/p99/p99.9: tap <-> tap and the VM path, vs bridge and DPDK",
         run_latency},
    };
    return all;
}

const Experiment* find_experiment(const std::string& id) {
    for (const Experiment& e : experiments()) {
        if (id == e.id) {
            return &e;
        }
    }
    return nullptr;
}

void run_guarded(Table& table, const std::function<void()>& body) {
    try {
        body();
    } catch (const Interrupted&) {
        throw;
    } catch (const std::exception& e) {
        blog().error("{}: set-up failed: {}", table.id, e.what());
        table.fill_unmeasured(std::string("set-up failed: ") + e.what());
    }
}

std::function<double(nlohmann::json& extra)> also_record(
    Table& table, std::string row, std::string column, std::string field,
    std::function<double(nlohmann::json& extra)> measure) {
    return [&table, row = std::move(row), column = std::move(column), field = std::move(field),
            measure = std::move(measure)](nlohmann::json& extra) {
        const double value = measure(extra);
        if (extra.contains(field)) {
            table.cell(row, column).add_sample(extra[field].get<double>());
        }
        return value;
    };
}

void run_points(BenchContext& ctx, Table& table, const std::vector<Point>& points) {
    for (const Point& p : points) {
        if (ctx.quick() && !p.in_quick) {
            table.cell(p.row, p.column).set_not_available(kSkippedInQuick);
        }
    }
    for (int rep = 0; rep < ctx.repeats(); ++rep) {
        for (const Point& p : points) {
            if (ctx.quick() && !p.in_quick) {
                continue;
            }
            Row& row = table.row(p.row);
            Cell& cell = table.cell(p.row, p.column);
            const Column& column = table.columns[table.column_index(p.column)];
            blog().info("{} [{}/{}] {} / {} ...", table.id, rep + 1, ctx.repeats(), row.label,
                        column.title);
            nlohmann::json extra = nlohmann::json::object();
            try {
                const double v = p.measure(extra);
                cell.add_sample(v);
                blog().info("  {} {}", format_cell(Cell::number(v), column), column.unit);
            } catch (const Interrupted&) {
                throw;
            } catch (const std::exception& e) {
                cell.set_not_available(e.what());
                blog().warn("  n/a: {}", e.what());
            }
            if (!extra.empty()) {
                row.extra[p.column] = extra;
            }
        }
    }
}

}  // namespace vnet::bench
