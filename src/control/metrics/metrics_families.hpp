// What the ports and the workers tell Prometheus, built at scrape time from
// the counters as they are then (see metrics.hpp). The label names are the
// words the stats JSON and `vnetctl stats` use: `port` (the port's name from
// the config), `queue` (the queue pair index), `direction` (`rx`: packets out
// of the port, what its guest sent or its tap read; `tx`: packets into the
// port), `reason` (a packet::DropReason, as in the JSON's "drops"), `kind`
// (the port factory's name), `worker` (the worker's index, as in
// worker_cpus), `switch` (the switch's name, as in `vnetctl switch list`).
// docs/USAGE.md ("Metrics") lists every family.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "control/metrics/metrics.hpp"
#include "dataplane/switch/switch_counters.hpp"
#include "ports/port.hpp"

namespace vnet::control {

// One port as a scrape sees it. `port` is read on the thread that owns the
// port list, during the scrape only.
struct PortMetricsView {
    ports::Port* port = nullptr;
    std::string_view kind;
    // Front ends connected now, for a port with a service (a vhost-user
    // socket); none for a tap or a discard port.
    std::optional<size_t> connections;
};

// Per port, queue pair and direction: a family per row of the counter table
// (packet/queue_counter_table.hpp); per port: info (kind), queue pairs,
// connections.
void add_port_families(const std::vector<PortMetricsView>& ports, MetricFamilies& out);

// One worker's totals (dataplane::Worker's relaxed counters).
struct WorkerMetricsSample {
    uint64_t busy_ns = 0;
    uint64_t idle_ns = 0;
    uint64_t rounds = 0;
    uint64_t sleeps = 0;
};

// Per worker (label `worker`: its index): busy and idle seconds, rounds, sleeps.
void add_worker_families(const std::vector<WorkerMetricsSample>& workers, MetricFamilies& out);

// One switch as its worker read it during the scrape (what switch.list says).
struct SwitchMetricsSample {
    std::string name;
    uint64_t mac_entries = 0;
    uint64_t mac_table_size = 0;
    dataplane::switching::SwitchCounters::Snapshot counters;
};

// Per switch (label `switch`): MAC entries and the table's bound (gauges),
// learned, moved, aged, table_full, flooded and drops by reason (counters).
// A switch that is gone has no sample: its series end with it.
void add_switch_families(const std::vector<SwitchMetricsSample>& switches, MetricFamilies& out);

}  // namespace vnet::control
