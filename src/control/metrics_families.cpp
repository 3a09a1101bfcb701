#include "control/metrics_families.hpp"

#include <limits>
#include <string>

#include "packet/queue_counters.hpp"

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
ClientMetric::Histogram burst_histogram(const packet::QueueCounters& c) {
    ClientMetric::Histogram h;
    uint64_t cumulative = 0;
    for (size_t b = 0; b < packet::kBurstHistogramBuckets; ++b) {
        cumulative += c.burst_sizes[b].get();
        const double upper = b + 1 == packet::kBurstHistogramBuckets
                                 ? std::numeric_limits<double>::infinity()
                                 : static_cast<double>((uint64_t{2} << b) - 1);
        h.bucket.push_back(ClientMetric::Bucket{cumulative, upper});
    }
    h.sample_count = cumulative;
    h.sample_sum = static_cast<double>(c.packets.get());
    return h;
}

// The per-queue families, filled from the same counters in one loop.
struct QueueFamilies {
    MetricFamily packets =
        family("vnetd_port_packets_total", "packets (rx: out of the port, tx: into it)",
               MetricType::Counter);
    MetricFamily bytes = family("vnetd_port_bytes_total",
                                "bytes, as the stats count them (rx: out of the port, tx: into it)",
                                MetricType::Counter);
    MetricFamily bursts =
        family("vnetd_port_bursts_total", "bursts of one or more packets", MetricType::Counter);
    MetricFamily burst_size =
        family("vnetd_port_burst_size", "packets per burst", MetricType::Histogram);
    MetricFamily drops =
        family("vnetd_port_drops_total", "packets dropped, by reason", MetricType::Counter);
    MetricFamily gro_frames = family(
        "vnetd_port_gro_frames_total",
        "frames written that user-space GRO merged from several segments", MetricType::Counter);
    MetricFamily gro_segments = family("vnetd_port_gro_segments_total",
                                       "segments those GRO frames carried", MetricType::Counter);
    MetricFamily publishes_coalesced =
        family("vnetd_port_publishes_coalesced_total",
               "guest RX used-index publishes merged into a later one (rx_frames, rx_usecs)",
               MetricType::Counter);
    MetricFamily kicks = family("vnetd_port_kicks_total",
                                "guest kicks on the ring's kick eventfd, as the worker read them",
                                MetricType::Counter);
    MetricFamily calls =
        family("vnetd_port_calls_total", "guest interrupts vnetd signalled (call eventfd writes)",
               MetricType::Counter);
    MetricFamily inflight_resumed =
        family("vnetd_port_inflight_resumed_total",
               "chains a previous vnetd had taken and not completed, resubmitted at ring start",
               MetricType::Counter);

    void add(const Labels& labels, const packet::QueueCounters& c) {
        add_counter(packets, labels, static_cast<double>(c.packets.get()));
        add_counter(bytes, labels, static_cast<double>(c.bytes.get()));
        add_counter(bursts, labels, static_cast<double>(c.bursts.get()));
        ClientMetric h;
        h.label = labels;
        h.histogram = burst_histogram(c);
        burst_size.metric.push_back(std::move(h));
        for (size_t r = 0; r < packet::kDropReasonCount; ++r) {
            Labels with_reason = labels;
            with_reason.push_back(
                {"reason", std::string(packet::to_string(static_cast<packet::DropReason>(r)))});
            add_counter(drops, std::move(with_reason), static_cast<double>(c.drops[r].get()));
        }
        add_counter(gro_frames, labels, static_cast<double>(c.gro_frames.get()));
        add_counter(gro_segments, labels, static_cast<double>(c.gro_segments.get()));
        add_counter(publishes_coalesced, labels, static_cast<double>(c.publishes_coalesced.get()));
        add_counter(kicks, labels, static_cast<double>(c.kicks.get()));
        add_counter(calls, labels, static_cast<double>(c.calls.get()));
        add_counter(inflight_resumed, labels, static_cast<double>(c.inflight_resumed.get()));
    }
    void move_into(MetricFamilies& out) {
        for (MetricFamily* f :
             {&packets, &bytes, &bursts, &burst_size, &drops, &gro_frames, &gro_segments,
              &publishes_coalesced, &kicks, &calls, &inflight_resumed}) {
            out.push_back(std::move(*f));
        }
    }
};

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
