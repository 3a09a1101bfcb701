#include "control/metrics/metrics_families.hpp"

#include <limits>
#include <span>
#include <string>

#include "packet/queue_counter_table.hpp"

namespace vnet::control {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

MetricFamily family(std::string name, std::string help, MetricType type) {
    return MetricFamily{std::move(name), std::move(help), type, {}};
}

void add_counter(MetricFamily& family, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    family.metric.push_back(std::move(m));
}

void add_gauge(MetricFamily& family, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    family.metric.push_back(std::move(m));
}

// packet::QueueCounters' buckets as Prometheus buckets: bucket b holds
// bursts of 2^b .. 2^(b+1)-1 packets, the last one everything above, so the
// upper bounds are 1, 3, 7, ..., 63, +Inf and the counts are cumulative.
// Every counted burst added its size to `packets`: that is the sum.
ClientMetric::Histogram burst_histogram(std::span<const packet::Counter> buckets,
                                        const packet::QueueCounters& c) {
    ClientMetric::Histogram h;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
        cumulative += buckets[b].get();
        const double upper = b + 1 == buckets.size() ? std::numeric_limits<double>::infinity()
                                                     : static_cast<double>((uint64_t{2} << b) - 1);
        h.bucket.push_back(ClientMetric::Bucket{cumulative, upper});
    }
    h.sample_count = cumulative;
    h.sample_sum = static_cast<double>(c.packets.get());
    return h;
}

// A row of packet::kQueueCounterRows as a family: vnetd_port_<name>, a
// histogram for the burst sizes, a counter (_total) for the others.
MetricFamily queue_family(const packet::QueueCounterRow& row) {
    if (row.shape == packet::CounterShape::burst_sizes) {
        return family("vnetd_port_" + std::string(row.name), std::string(row.help),
                      MetricType::Histogram);
    }
    return family("vnetd_port_" + std::string(row.name) + "_total", std::string(row.help),
                  MetricType::Counter);
}

// One queue's samples of a row: one, one per reason (label `reason`, as the
// stats JSON names it) or one histogram.
void add_samples(MetricFamily& f, const packet::QueueCounterRow& row, const Labels& labels,
                 const packet::QueueCounters& c) {
    const std::span<const packet::Counter> cells = row.cells(c);
    switch (row.shape) {
        case packet::CounterShape::single:
            add_counter(f, labels, static_cast<double>(cells[0].get()));
            return;
        case packet::CounterShape::by_reason:
            for (size_t r = 0; r < cells.size(); ++r) {
                Labels with_reason = labels;
                with_reason.push_back({"reason", std::string(row.cell_label(r))});
                add_counter(f, std::move(with_reason), static_cast<double>(cells[r].get()));
            }
            return;
        case packet::CounterShape::burst_sizes: {
            ClientMetric h;
            h.label = labels;
            h.histogram = burst_histogram(cells, c);
            f.metric.push_back(std::move(h));
            return;
        }
    }
}

// One family per row of the counter table, in its order, filled from every
// port's queues in one loop.
struct QueueFamilies {
    std::vector<MetricFamily> families;

    QueueFamilies() {
        for (const packet::QueueCounterRow& row : packet::kQueueCounterRows) {
            families.push_back(queue_family(row));
        }
    }
    void add(const Labels& labels, const packet::QueueCounters& c) {
        for (size_t i = 0; i < packet::kQueueCounterRows.size(); ++i) {
            add_samples(families[i], packet::kQueueCounterRows[i], labels, c);
        }
    }
    void move_into(MetricFamilies& out) {
        for (MetricFamily& f : families) {
            out.push_back(std::move(f));
        }
    }
};

bool counted_anything(const packet::QueueCounters& c) {
    return c.packets.get() != 0 || c.total_drops() != 0;
}

// A queue pair has series once it means something: queue pair 0 always (a
// port's series exist before its front end comes), any other while its
// front end has it enabled, or once it counted a packet or a drop (a
// counter must not vanish when the guest turns the queue off). A guest
// that enables 1 of 8 offered queue pairs gets 1 queue pair of series,
// not 8 (each is 35 series per direction). A port without a front end (a
// tap: its queues are open whether or not its VM peer runs them) shows a
// queue pair once it counted something.
bool has_queue_series(ports::Port& port, uint16_t queue) {
    const bool enabled =
        port.has_front_end() && (port.source_ready(queue) || port.destination_ready(queue));
    return queue == 0 || enabled || counted_anything(port.rx_counters(queue)) ||
           counted_anything(port.tx_counters(queue));
}

}  // namespace

void add_port_families(const std::vector<PortMetricsView>& ports, MetricFamilies& out) {
    MetricFamily info =
        family("vnetd_port_info", "a port vnetd has, with its kind (always 1)", MetricType::Gauge);
    MetricFamily queue_pairs =
        family("vnetd_port_queue_pairs", "queue pairs the port serves at most", MetricType::Gauge);
    MetricFamily connections =
        family("vnetd_port_connections", "front ends connected to the port's socket now",
               MetricType::Gauge);
    QueueFamilies q;
    for (const PortMetricsView& view : ports) {
        ports::Port& port = *view.port;
        add_gauge(info, {{"port", port.name()}, {"kind", std::string(view.kind)}}, 1);
        add_gauge(queue_pairs, {{"port", port.name()}}, port.queue_count());
        if (view.connections) {
            add_gauge(connections, {{"port", port.name()}}, static_cast<double>(*view.connections));
        }
        for (uint16_t queue = 0; queue < port.queue_count(); ++queue) {
            if (!has_queue_series(port, queue)) {
                continue;
            }
            const std::string queue_label = std::to_string(queue);
            q.add({{"port", port.name()}, {"queue", queue_label}, {"direction", "rx"}},
                  port.rx_counters(queue));
            q.add({{"port", port.name()}, {"queue", queue_label}, {"direction", "tx"}},
                  port.tx_counters(queue));
        }
    }
    out.push_back(std::move(info));
    out.push_back(std::move(queue_pairs));
    out.push_back(std::move(connections));
    q.move_into(out);
}

void add_worker_families(const std::vector<WorkerMetricsSample>& workers, MetricFamilies& out) {
    MetricFamily busy = family("vnetd_worker_busy_seconds_total",
                               "time in rounds that moved packets", MetricType::Counter);
    MetricFamily idle =
        family("vnetd_worker_idle_seconds_total", "time in empty rounds, busy-polling and sleeping",
               MetricType::Counter);
    MetricFamily rounds =
        family("vnetd_worker_rounds_total", "rounds: one turn of every path", MetricType::Counter);
    MetricFamily sleeps =
        family("vnetd_worker_sleeps_total", "sleeps in epoll (event mode)", MetricType::Counter);
    for (size_t i = 0; i < workers.size(); ++i) {
        const Labels labels{{"worker", std::to_string(i)}};
        add_counter(busy, labels, static_cast<double>(workers[i].busy_ns) / 1e9);
        add_counter(idle, labels, static_cast<double>(workers[i].idle_ns) / 1e9);
        add_counter(rounds, labels, static_cast<double>(workers[i].rounds));
        add_counter(sleeps, labels, static_cast<double>(workers[i].sleeps));
    }
    for (MetricFamily* f : {&busy, &idle, &rounds, &sleeps}) {
        out.push_back(std::move(*f));
    }
}

void add_switch_families(const std::vector<SwitchMetricsSample>& switches, MetricFamilies& out) {
    using dataplane::switching::kSwitchCounterFields;
    MetricFamily entries =
        family("vnetd_switch_mac_entries", "MACs in the switch's table now", MetricType::Gauge);
    MetricFamily table_size =
        family("vnetd_switch_mac_table_size",
               "entries the MAC table holds at most (mac_table_size); a full table floods",
               MetricType::Gauge);
    std::vector<MetricFamily> events;
    for (const auto& field : kSwitchCounterFields) {
        events.push_back(family("vnetd_switch_" + std::string(field.name) + "_total",
                                std::string(field.help), MetricType::Counter));
    }
    MetricFamily drops = family("vnetd_switch_drops_total", "packets the switch dropped, by reason",
                                MetricType::Counter);
    for (const SwitchMetricsSample& s : switches) {
        const Labels labels{{"switch", s.name}};
        add_gauge(entries, labels, static_cast<double>(s.mac_entries));
        add_gauge(table_size, labels, static_cast<double>(s.mac_table_size));
        for (size_t i = 0; i < kSwitchCounterFields.size(); ++i) {
            add_counter(events[i], labels,
                        static_cast<double>(s.counters.*kSwitchCounterFields[i].value));
        }
        for (size_t r = 0; r < packet::kDropReasonCount; ++r) {
            add_counter(
                drops,
                {{"switch", s.name},
                 {"reason", std::string(packet::to_string(static_cast<packet::DropReason>(r)))}},
                static_cast<double>(s.counters.drops[r]));
        }
    }
    out.push_back(std::move(entries));
    out.push_back(std::move(table_size));
    for (MetricFamily& f : events) {
        out.push_back(std::move(f));
    }
    out.push_back(std::move(drops));
}

}  // namespace vnet::control
