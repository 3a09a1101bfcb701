// Metrics as a scrape sees them: the families the ports and workers give
// (names, types, label names, values read from the counters at collect
// time), the burst histogram as cumulative Prometheus buckets, the
// collector's sources and runner, and the metrics_address option.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

#include "common/unique_fd.hpp"
#include "control/config/option_table.hpp"
#include "control/metrics/listen_address.hpp"
#include "control/metrics/metrics.hpp"
#include "control/metrics/metrics_families.hpp"
#include "control/metrics/process_metrics.hpp"
#include "packet/queue_counter_table.hpp"
#include "ports/null/null_port.hpp"

namespace vnet::control {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

const MetricFamily* find_family(const MetricFamilies& families, const std::string& name) {
    for (const MetricFamily& f : families) {
        if (f.name == name) {
            return &f;
        }
    }
    return nullptr;
}

// "name=value,..." of a sample's labels, in their order.
std::string labels_of(const ClientMetric& m) {
    std::string out;
    for (const ClientMetric::Label& l : m.label) {
        out += (out.empty() ? "" : ",") + l.name + "=" + l.value;
    }
    return out;
}

const ClientMetric* find_sample(const MetricFamily& family, const std::string& labels) {
    for (const ClientMetric& m : family.metric) {
        if (labels_of(m) == labels) {
            return &m;
        }
    }
    return nullptr;
}

// Two ports like a config's: "vm0" with two queue pairs and a connection
// count, "t0" with one; counters written as the datapath writes them.
struct TwoPorts {
    ports::NullPort vm0{"vm0", 2};
    ports::NullPort t0{"t0", 1};

    TwoPorts() {
        vm0.rx_counters(1).count_burst(1, 60);
        vm0.rx_counters(1).count_burst(3, 180);
        vm0.rx_counters(1).count_burst(64, 6400);
        vm0.rx_counters(1).count_drop(packet::DropReason::no_destination, 5);
        t0.tx_counters(0).count_burst(2, 128);
        t0.tx_counters(0).gro_frames.add(1);
        t0.tx_counters(0).gro_segments.add(4);
        vm0.rx_counters(1).kicks.add(7);
        vm0.tx_counters(1).calls.add(3);
        vm0.rx_counters(0).inflight_resumed.add(2);
    }
    MetricFamilies collect() {
        MetricFamilies out;
        add_port_families({{&vm0, "vhost-user", 1}, {&t0, "tap", std::nullopt}}, out);
        return out;
    }
};

TEST(PortMetrics, every_family_has_its_name_and_type) {
    TwoPorts ports;
    const MetricFamilies families = ports.collect();
    const std::vector<std::pair<std::string, MetricType>> expected = {
        {"vnetd_port_info", MetricType::Gauge},
        {"vnetd_port_queue_pairs", MetricType::Gauge},
        {"vnetd_port_connections", MetricType::Gauge},
        {"vnetd_port_packets_total", MetricType::Counter},
        {"vnetd_port_bytes_total", MetricType::Counter},
        {"vnetd_port_bursts_total", MetricType::Counter},
        {"vnetd_port_burst_size", MetricType::Histogram},
        {"vnetd_port_drops_total", MetricType::Counter},
        {"vnetd_port_gro_frames_total", MetricType::Counter},
        {"vnetd_port_gro_segments_total", MetricType::Counter},
        {"vnetd_port_publishes_coalesced_total", MetricType::Counter},
        {"vnetd_port_kicks_total", MetricType::Counter},
        {"vnetd_port_calls_total", MetricType::Counter},
        {"vnetd_port_inflight_resumed_total", MetricType::Counter},
    };
    ASSERT_EQ(families.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(families[i].name, expected[i].first);
        EXPECT_EQ(families[i].type, expected[i].second) << expected[i].first;
        EXPECT_FALSE(families[i].help.empty()) << expected[i].first;
    }
}

TEST(PortMetrics, queue_families_have_a_sample_per_port_queue_and_direction) {
    TwoPorts ports;
    const MetricFamilies families = ports.collect();
    const MetricFamily* packets = find_family(families, "vnetd_port_packets_total");
    ASSERT_NE(packets, nullptr);
    std::vector<std::string> labels;
    for (const ClientMetric& m : packets->metric) {
        labels.push_back(labels_of(m));
    }
    EXPECT_EQ(labels, (std::vector<std::string>{
                          "port=vm0,queue=0,direction=rx", "port=vm0,queue=0,direction=tx",
                          "port=vm0,queue=1,direction=rx", "port=vm0,queue=1,direction=tx",
                          "port=t0,queue=0,direction=rx", "port=t0,queue=0,direction=tx"}));
}

// A VM port as a front end leaves it: 8 queue pairs offered, the ones in
// `enabled` running.
class GuestPort final : public ports::Port {
public:
    GuestPort(std::string name, std::vector<uint16_t> enabled)
        : Port(std::move(name)), enabled_(std::move(enabled)) {}
    uint16_t queue_count() const override { return 8; }
    bool has_front_end() const override { return front_end_; }
    void without_front_end() { front_end_ = false; }
    ports::QueuePairCapabilities capabilities(uint16_t) override { return {}; }
    bool queue_ready(uint16_t q) const override {
        return std::find(enabled_.begin(), enabled_.end(), q) != enabled_.end();
    }
    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t q) override { return rx_[q]; }
    packet::QueueCounters& tx_counters(uint16_t q) override { return tx_[q]; }

private:
    std::vector<uint16_t> enabled_;
    bool front_end_ = true;
    std::array<packet::QueueCounters, 8> rx_, tx_;
};

size_t series_count(const MetricFamilies& families) {
    size_t n = 0;
    for (const MetricFamily& f : families) {
        for (const ClientMetric& m : f.metric) {
            // What the text format writes: a histogram is its buckets, _sum and _count.
            n += f.type == MetricType::Histogram ? m.histogram.bucket.size() + 2 : 1;
        }
    }
    return n;
}

std::vector<std::string> queues_with_series(const MetricFamilies& families) {
    std::vector<std::string> out;
    for (const ClientMetric& m : find_family(families, "vnetd_port_packets_total")->metric) {
        if (labels_of(m).ends_with("direction=rx")) {
            out.push_back(m.label[1].value);
        }
    }
    return out;
}

TEST(PortMetrics, only_queue_pairs_the_front_end_enabled_have_series) {
    GuestPort idle("vm0", {0});
    MetricFamilies one;
    add_port_families({{&idle, "vhost-user", 1}}, one);
    EXPECT_EQ(queues_with_series(one), (std::vector<std::string>{"0"}));
    // info, queue_pairs, connections; then per direction one sample per
    // single row, a reason's worth per by-reason row, a histogram.
    size_t per_direction = 0;
    for (const packet::QueueCounterRow& row : packet::kQueueCounterRows) {
        per_direction += row.shape == packet::CounterShape::single ? 1
                         : row.shape == packet::CounterShape::by_reason
                             ? packet::kDropReasonCount
                             : packet::kBurstHistogramBuckets + 2;
    }
    EXPECT_EQ(series_count(one), 3 + 2 * per_direction);
    EXPECT_EQ(series_count(one), 73u);  // docs/USAGE.md "Metrics" says so

    GuestPort two("vm1", {0, 3});
    two.rx_counters(5).count_drop(packet::DropReason::no_destination);  // counted once: kept
    MetricFamilies three;
    add_port_families({{&two, "vhost-user", 1}}, three);
    EXPECT_EQ(queues_with_series(three), (std::vector<std::string>{"0", "3", "5"}));
    EXPECT_EQ(series_count(three), 3 + 3 * 2 * per_direction);

    // A tap's queues are all open, whatever its VM peer runs: only what
    // counted something shows.
    GuestPort tap("t0", {0, 1, 2, 3, 4, 5, 6, 7});
    tap.without_front_end();
    tap.tx_counters(2).count_burst(1, 60);
    MetricFamilies taps;
    add_port_families({{&tap, "tap", std::nullopt}}, taps);
    EXPECT_EQ(queues_with_series(taps), (std::vector<std::string>{"0", "2"}));
}

TEST(PortMetrics, values_are_the_counters_at_collect_time) {
    TwoPorts ports;
    MetricFamilies families = ports.collect();
    auto value = [&](const char* family, const char* labels) {
        const MetricFamily* f = find_family(families, family);
        const ClientMetric* m = f == nullptr ? nullptr : find_sample(*f, labels);
        return m == nullptr ? -1.0 : m->counter.value;
    };
    EXPECT_EQ(value("vnetd_port_packets_total", "port=vm0,queue=1,direction=rx"), 68);
    EXPECT_EQ(value("vnetd_port_bytes_total", "port=vm0,queue=1,direction=rx"), 6640);
    EXPECT_EQ(value("vnetd_port_bursts_total", "port=vm0,queue=1,direction=rx"), 3);
    EXPECT_EQ(value("vnetd_port_packets_total", "port=vm0,queue=0,direction=rx"), 0);
    EXPECT_EQ(value("vnetd_port_packets_total", "port=t0,queue=0,direction=tx"), 2);
    EXPECT_EQ(value("vnetd_port_gro_frames_total", "port=t0,queue=0,direction=tx"), 1);
    EXPECT_EQ(value("vnetd_port_gro_segments_total", "port=t0,queue=0,direction=tx"), 4);
    EXPECT_EQ(value("vnetd_port_kicks_total", "port=vm0,queue=1,direction=rx"), 7);
    EXPECT_EQ(value("vnetd_port_calls_total", "port=vm0,queue=1,direction=tx"), 3);
    EXPECT_EQ(value("vnetd_port_calls_total", "port=vm0,queue=1,direction=rx"), 0);
    EXPECT_EQ(value("vnetd_port_inflight_resumed_total", "port=vm0,queue=0,direction=rx"), 2);
    EXPECT_EQ(value("vnetd_port_inflight_resumed_total", "port=t0,queue=0,direction=rx"), 0);
    EXPECT_EQ(
        value("vnetd_port_drops_total", "port=vm0,queue=1,direction=rx,reason=no_destination"), 5);
    EXPECT_EQ(value("vnetd_port_drops_total", "port=vm0,queue=1,direction=rx,reason=tx_error"), 0);

    // Read again: a scrape sees what the datapath counted since.
    ports.t0.tx_counters(0).count_burst(8, 512);
    families = ports.collect();
    EXPECT_EQ(value("vnetd_port_packets_total", "port=t0,queue=0,direction=tx"), 10);
}

TEST(PortMetrics, drops_have_one_sample_per_reason_named_as_in_the_stats) {
    TwoPorts ports;
    const MetricFamilies families = ports.collect();
    const MetricFamily* drops = find_family(families, "vnetd_port_drops_total");
    ASSERT_NE(drops, nullptr);
    EXPECT_EQ(drops->metric.size(), 6 * packet::kDropReasonCount);
    for (size_t r = 0; r < packet::kDropReasonCount; ++r) {
        const std::string reason(packet::to_string(static_cast<packet::DropReason>(r)));
        EXPECT_NE(find_sample(*drops, "port=t0,queue=0,direction=tx,reason=" + reason), nullptr)
            << reason;
    }
}

TEST(PortMetrics, the_burst_histogram_has_cumulative_buckets_its_count_and_sum) {
    TwoPorts ports;
    const MetricFamilies families = ports.collect();
    const MetricFamily* bursts = find_family(families, "vnetd_port_burst_size");
    ASSERT_NE(bursts, nullptr);
    const ClientMetric* m = find_sample(*bursts, "port=vm0,queue=1,direction=rx");
    ASSERT_NE(m, nullptr);
    // Bursts of 1, 3 and 64: buckets <=1, <=3, <=7, <=15, <=31, <=63, +Inf.
    std::vector<double> bounds;
    std::vector<uint64_t> counts;
    for (const ClientMetric::Bucket& b : m->histogram.bucket) {
        bounds.push_back(b.upper_bound);
        counts.push_back(b.cumulative_count);
    }
    ASSERT_EQ(bounds.size(), 7u);
    EXPECT_EQ(std::vector<double>(bounds.begin(), bounds.end() - 1),
              (std::vector<double>{1, 3, 7, 15, 31, 63}));
    EXPECT_TRUE(std::isinf(bounds.back()));
    EXPECT_EQ(counts, (std::vector<uint64_t>{1, 2, 2, 2, 2, 2, 3}));
    EXPECT_EQ(m->histogram.sample_count, 3u);
    EXPECT_EQ(m->histogram.sample_sum, 68);
}

TEST(PortMetrics, port_state_gives_kind_queue_pairs_and_connections_where_known) {
    TwoPorts ports;
    const MetricFamilies families = ports.collect();
    const MetricFamily* info = find_family(families, "vnetd_port_info");
    ASSERT_NE(info, nullptr);
    ASSERT_EQ(info->metric.size(), 2u);
    EXPECT_EQ(labels_of(info->metric[0]), "port=vm0,kind=vhost-user");
    EXPECT_EQ(labels_of(info->metric[1]), "port=t0,kind=tap");
    EXPECT_EQ(info->metric[0].gauge.value, 1);
    const MetricFamily* pairs = find_family(families, "vnetd_port_queue_pairs");
    ASSERT_NE(pairs, nullptr);
    EXPECT_EQ(find_sample(*pairs, "port=vm0")->gauge.value, 2);
    EXPECT_EQ(find_sample(*pairs, "port=t0")->gauge.value, 1);
    const MetricFamily* connections = find_family(families, "vnetd_port_connections");
    ASSERT_NE(connections, nullptr);
    ASSERT_EQ(connections->metric.size(), 1u);  // the tap has no socket
    EXPECT_EQ(labels_of(connections->metric[0]), "port=vm0");
    EXPECT_EQ(connections->metric[0].gauge.value, 1);
}

TEST(PortMetrics, no_ports_still_gives_every_family_with_no_samples) {
    MetricFamilies out;
    add_port_families({}, out);
    ASSERT_EQ(out.size(), 14u);
    for (const MetricFamily& f : out) {
        EXPECT_TRUE(f.metric.empty()) << f.name;
    }
}

TEST(WorkerMetrics, busy_and_idle_are_seconds_per_worker_index) {
    MetricFamilies out;
    add_worker_families({{1'500'000'000, 250'000'000, 7, 2}, {0, 3'000'000'000, 9, 4}}, out);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].name, "vnetd_worker_busy_seconds_total");
    EXPECT_EQ(out[1].name, "vnetd_worker_idle_seconds_total");
    EXPECT_EQ(out[2].name, "vnetd_worker_rounds_total");
    EXPECT_EQ(out[3].name, "vnetd_worker_sleeps_total");
    for (const MetricFamily& f : out) {
        EXPECT_EQ(f.type, MetricType::Counter);
        ASSERT_EQ(f.metric.size(), 2u);
        EXPECT_EQ(labels_of(f.metric[0]), "worker=0");
        EXPECT_EQ(labels_of(f.metric[1]), "worker=1");
    }
    EXPECT_EQ(out[0].metric[0].counter.value, 1.5);
    EXPECT_EQ(out[1].metric[0].counter.value, 0.25);
    EXPECT_EQ(out[1].metric[1].counter.value, 3.0);
    EXPECT_EQ(out[2].metric[1].counter.value, 9);
    EXPECT_EQ(out[3].metric[0].counter.value, 2);
}

TEST(MetricsCollector, each_scrape_asks_every_source_again) {
    auto collector = MetricsCollector::make();
    int scrapes = 0;
    collector->add_source([&](MetricFamilies& out) {
        ++scrapes;
        out.push_back(MetricFamily{"a", "first", MetricType::Gauge, {}});
    });
    collector->add_source([](MetricFamilies& out) {
        out.push_back(MetricFamily{"b", "second", MetricType::Gauge, {}});
    });
    MetricFamilies families = collector->Collect();
    ASSERT_EQ(families.size(), 2u);
    EXPECT_EQ(families[0].name, "a");
    EXPECT_EQ(families[1].name, "b");
    collector->Collect();
    EXPECT_EQ(scrapes, 2);
}

TEST(MetricsCollector, sources_run_inside_the_runner) {
    int ran_inside = 0;
    bool inside = false;
    auto collector = MetricsCollector::make([&](std::function<void()> work) {
        inside = true;
        work();
        inside = false;
        return true;
    });
    collector->add_source([&](MetricFamilies& out) {
        ran_inside += inside ? 1 : 0;
        out.push_back(MetricFamily{"a", "first", MetricType::Gauge, {}});
    });
    EXPECT_EQ(collector->Collect().size(), 1u);
    EXPECT_EQ(ran_inside, 1);
}

TEST(MetricsCollector, a_runner_that_gives_up_answers_with_no_families) {
    std::function<void()> late;
    auto collector = MetricsCollector::make([&](std::function<void()> work) {
        late = std::move(work);
        return false;
    });
    collector->add_source([](MetricFamilies& out) {
        out.push_back(MetricFamily{"a", "first", MetricType::Gauge, {}});
    });
    EXPECT_TRUE(collector->Collect().empty());
    // The work it kept may still run later: it owns what it touches.
    collector.reset();
    ASSERT_TRUE(late);
    late();
}

TEST(MetricsAddress, takes_host_and_port_and_refuses_anything_else) {
    const OptionSpec* option = find_option(OptionScope::daemon, "metrics_address");
    ASSERT_NE(option, nullptr);
    Config config;
    EXPECT_TRUE(config.metrics_address.empty());  // off by default
    option->set(config, nullptr, "127.0.0.1:9464");
    EXPECT_EQ(config.metrics_address, "127.0.0.1:9464");
    option->set(config, nullptr, "[::1]:9464");
    EXPECT_EQ(config.metrics_address, "[::1]:9464");
    option->set(config, nullptr, "");
    EXPECT_EQ(config.metrics_address, "");
    option->set(config, nullptr, "127.0.0.1:0");  // any free port
    EXPECT_EQ(config.metrics_address, "127.0.0.1:0");
    option->set(config, nullptr, ":9464");  // every address of the host
    EXPECT_EQ(config.metrics_address, ":9464");
    for (const char* bad : {"127.0.0.1", "127.0.0.1:", ":", "127.0.0.1:65536", "host:x"}) {
        try {
            option->set(config, nullptr, bad);
            ADD_FAILURE() << bad << " was taken";
        } catch (const std::invalid_argument& e) {
            EXPECT_EQ(
                std::string(e.what()),
                std::string("metrics_address must be HOST:PORT, [IPv6]:PORT or :PORT, not '") +
                    bad + "'");
        }
    }
}

// Two switches as their workers read them: s0 learned and flooded, s1 fresh.
MetricFamilies two_switches() {
    SwitchMetricsSample s0{"s0", 3, 8192, {}};
    s0.counters.learned = 4;
    s0.counters.moved = 1;
    s0.counters.aged = 1;
    s0.counters.table_full = 2;
    s0.counters.flooded = 17;
    s0.counters.drops[static_cast<size_t>(packet::DropReason::destination_full)] = 9;
    MetricFamilies out;
    add_switch_families({s0, SwitchMetricsSample{"s1", 0, 16, {}}}, out);
    return out;
}

TEST(SwitchMetrics, every_family_has_its_name_and_type) {
    const MetricFamilies families = two_switches();
    const std::vector<std::pair<std::string, MetricType>> expected = {
        {"vnetd_switch_mac_entries", MetricType::Gauge},
        {"vnetd_switch_mac_table_size", MetricType::Gauge},
        {"vnetd_switch_learned_total", MetricType::Counter},
        {"vnetd_switch_moved_total", MetricType::Counter},
        {"vnetd_switch_aged_total", MetricType::Counter},
        {"vnetd_switch_table_full_total", MetricType::Counter},
        {"vnetd_switch_flooded_total", MetricType::Counter},
        {"vnetd_switch_drops_total", MetricType::Counter},
    };
    ASSERT_EQ(families.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(families[i].name, expected[i].first);
        EXPECT_EQ(families[i].type, expected[i].second) << expected[i].first;
        EXPECT_FALSE(families[i].help.empty()) << expected[i].first;
    }
}

TEST(SwitchMetrics, values_are_the_switch_counters_labelled_by_switch_name) {
    const MetricFamilies families = two_switches();
    auto gauge = [&](const char* family, const char* labels) {
        const MetricFamily* f = find_family(families, family);
        const ClientMetric* m = f == nullptr ? nullptr : find_sample(*f, labels);
        return m == nullptr ? -1.0 : m->gauge.value;
    };
    auto counter = [&](const char* family, const char* labels) {
        const MetricFamily* f = find_family(families, family);
        const ClientMetric* m = f == nullptr ? nullptr : find_sample(*f, labels);
        return m == nullptr ? -1.0 : m->counter.value;
    };
    EXPECT_EQ(gauge("vnetd_switch_mac_entries", "switch=s0"), 3);
    EXPECT_EQ(gauge("vnetd_switch_mac_table_size", "switch=s0"), 8192);
    EXPECT_EQ(gauge("vnetd_switch_mac_entries", "switch=s1"), 0);
    EXPECT_EQ(gauge("vnetd_switch_mac_table_size", "switch=s1"), 16);
    EXPECT_EQ(counter("vnetd_switch_learned_total", "switch=s0"), 4);
    EXPECT_EQ(counter("vnetd_switch_moved_total", "switch=s0"), 1);
    EXPECT_EQ(counter("vnetd_switch_aged_total", "switch=s0"), 1);
    EXPECT_EQ(counter("vnetd_switch_table_full_total", "switch=s0"), 2);
    EXPECT_EQ(counter("vnetd_switch_flooded_total", "switch=s0"), 17);
    EXPECT_EQ(counter("vnetd_switch_flooded_total", "switch=s1"), 0);
    EXPECT_EQ(counter("vnetd_switch_drops_total", "switch=s0,reason=destination_full"), 9);
    EXPECT_EQ(counter("vnetd_switch_drops_total", "switch=s0,reason=spoofed"), 0);
    const MetricFamily* drops = find_family(families, "vnetd_switch_drops_total");
    ASSERT_NE(drops, nullptr);
    EXPECT_EQ(drops->metric.size(), 2 * packet::kDropReasonCount);
}

TEST(SwitchMetrics, no_switches_gives_every_family_with_no_samples) {
    MetricFamilies out;
    add_switch_families({}, out);
    ASSERT_EQ(out.size(), 8u);
    for (const MetricFamily& f : out) {
        EXPECT_TRUE(f.metric.empty()) << f.name;
    }
}

TEST(MetricsEndpoint, an_address_it_cannot_listen_on_is_an_error_naming_it) {
    auto collector = MetricsCollector::make();
    MetricsEndpoint first("127.0.0.1:0", collector);
    ASSERT_FALSE(first.listening_ports().empty());
    const std::string taken = "127.0.0.1:" + std::to_string(first.listening_ports()[0]);
    try {
        MetricsEndpoint second(taken, collector);
        ADD_FAILURE() << "a second endpoint listened on " << taken;
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "metrics_address " + taken + ": address in use");
    }
}

std::string endpoint_error(const std::string& address) {
    try {
        MetricsEndpoint endpoint(address, MetricsCollector::make());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

TEST(MetricsEndpoint, an_address_not_of_this_host_or_unresolvable_is_a_bad_address) {
    EXPECT_EQ(endpoint_error("192.0.2.1:0"),
              "metrics_address 192.0.2.1:0: bad address (not an address of this host)");
    EXPECT_EQ(
        endpoint_error("no-such-host.invalid:0")
            .rfind("metrics_address no-such-host.invalid:0: bad address (no-such-host.invalid: ",
                   0),
        0u)
        << endpoint_error("no-such-host.invalid:0");
}

TEST(MetricsEndpoint, an_ipv6_address_in_use_or_not_of_this_host_is_said_so) {
    MetricsEndpoint v6("[::1]:0", MetricsCollector::make());
    ASSERT_FALSE(v6.listening_ports().empty());
    const std::string taken = "[::1]:" + std::to_string(v6.listening_ports()[0]);
    EXPECT_EQ(endpoint_error(taken), "metrics_address " + taken + ": address in use");
    EXPECT_EQ(endpoint_error("[2001:db8::1]:0"),
              "metrics_address [2001:db8::1]:0: bad address (not an address of this host)");
    EXPECT_EQ(endpoint_error("[127.0.0.1]:0")
                  .rfind("metrics_address [127.0.0.1]:0: bad address (127.0.0.1: ", 0),
              0u)
        << endpoint_error("[127.0.0.1]:0");
}

// One HTTP/1.0 request to the loopback of `family` (AF_INET: 127.0.0.1,
// AF_INET6: ::1) at `port`: the whole answer, "" if it could not connect.
std::string http_request(int family, int port, const std::string& method, const std::string& path) {
    UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) {
        return "";
    }
    sockaddr_in v4{};
    sockaddr_in6 v6{};
    int rc = -1;
    if (family == AF_INET6) {
        v6.sin6_family = AF_INET6;
        v6.sin6_addr = in6addr_loopback;
        v6.sin6_port = htons(static_cast<uint16_t>(port));
        rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&v6), sizeof v6);
    } else {
        v4.sin_family = AF_INET;
        v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        v4.sin_port = htons(static_cast<uint16_t>(port));
        rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&v4), sizeof v4);
    }
    if (rc != 0) {
        return "";
    }
    const std::string request = method + " " + path + " HTTP/1.0\r\nHost: test\r\n\r\n";
    if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
        return "";
    }
    std::string answer;
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0) {
        answer.append(buf, static_cast<size_t>(n));
    }
    return answer;
}

// "200 OK" of "HTTP/1.x 200 OK\r\n...".
std::string status_line(const std::string& answer) {
    const size_t space = answer.find(' ');
    return space == std::string::npos ? ""
                                      : answer.substr(space + 1, answer.find("\r\n") - space - 1);
}

std::shared_ptr<MetricsCollector> one_gauge_collector() {
    auto collector = MetricsCollector::make();
    collector->add_source([](MetricFamilies& out) {
        ClientMetric m;
        m.gauge.value = 7;
        out.push_back(MetricFamily{"test_gauge", "A gauge.", MetricType::Gauge, {m}});
    });
    return collector;
}

TEST(MetricsEndpoint, serves_the_text_format_at_metrics_over_ipv6_loopback) {
    MetricsEndpoint v6("[::1]:0", one_gauge_collector());
    ASSERT_FALSE(v6.listening_ports().empty());
    const int port = v6.listening_ports()[0];
    const std::string answer = http_request(AF_INET6, port, "GET", "/metrics");
    EXPECT_EQ(status_line(answer), "200 OK") << answer;
    EXPECT_NE(answer.find("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
              std::string::npos)
        << answer;
    const std::string body = answer.substr(answer.find("\r\n\r\n") + 4);
    EXPECT_EQ(body, "# HELP test_gauge A gauge.\n# TYPE test_gauge gauge\ntest_gauge 7\n");
    // The same with a query string; HEAD has the headers alone.
    EXPECT_EQ(status_line(http_request(AF_INET6, port, "GET", "/metrics?x=1")), "200 OK");
    const std::string head = http_request(AF_INET6, port, "HEAD", "/metrics");
    EXPECT_EQ(status_line(head), "200 OK");
    EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "");
    // IPv6 only: not on 127.0.0.1.
    EXPECT_EQ(http_request(AF_INET, port, "GET", "/metrics"), "");
}

TEST(MetricsEndpoint, other_paths_are_404_and_other_methods_405) {
    MetricsEndpoint endpoint("127.0.0.1:0", one_gauge_collector());
    ASSERT_FALSE(endpoint.listening_ports().empty());
    const int port = endpoint.listening_ports()[0];
    EXPECT_EQ(status_line(http_request(AF_INET, port, "GET", "/")), "404 Not Found");
    EXPECT_EQ(status_line(http_request(AF_INET, port, "GET", "/metrics/x")), "404 Not Found");
    const std::string post = http_request(AF_INET, port, "POST", "/metrics");
    EXPECT_EQ(status_line(post), "405 Method Not Allowed");
    EXPECT_NE(post.find("\r\nAllow: GET, HEAD\r\n"), std::string::npos) << post;
    EXPECT_EQ(status_line(http_request(AF_INET, port, "GET", "/metrics")), "200 OK");
}

TEST(MetricsEndpoint, every_address_is_ipv6_and_ipv4_at_once) {
    for (const char* address : {":0", "[::]:0"}) {
        MetricsEndpoint any(address, one_gauge_collector());
        ASSERT_FALSE(any.listening_ports().empty()) << address;
        const int port = any.listening_ports()[0];
        EXPECT_GT(port, 0);
        for (int family : {AF_INET, AF_INET6}) {
            const std::string answer = http_request(family, port, "GET", "/metrics");
            EXPECT_EQ(status_line(answer), "200 OK") << address << " family " << family;
            EXPECT_NE(answer.find("\ntest_gauge 7\n"), std::string::npos) << answer;
        }
    }
}

TEST(MetricsAddress, resolves_to_the_socket_address_the_server_binds) {
    const MetricsListenAddress v4 = resolve_metrics_address("127.0.0.1:0");
    ASSERT_EQ(v4.address.ss_family, AF_INET);
    EXPECT_EQ(v4.length, sizeof(sockaddr_in));
    EXPECT_EQ(reinterpret_cast<const sockaddr_in*>(&v4.address)->sin_addr.s_addr,
              htonl(INADDR_LOOPBACK));
    EXPECT_FALSE(v4.dual_stack);
    const MetricsListenAddress v6 = resolve_metrics_address("[::1]:0");
    ASSERT_TRUE(v6.ipv6());
    EXPECT_EQ(v6.length, sizeof(sockaddr_in6));
    EXPECT_TRUE(
        IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&v6.address)->sin6_addr));
    EXPECT_FALSE(v6.dual_stack);
    for (const char* every : {":0", "[::]:0"}) {
        const MetricsListenAddress any = resolve_metrics_address(every);
        ASSERT_TRUE(any.ipv6()) << every;  // this host has IPv6
        EXPECT_TRUE(IN6_IS_ADDR_UNSPECIFIED(
            &reinterpret_cast<const sockaddr_in6*>(&any.address)->sin6_addr));
        EXPECT_TRUE(any.dual_stack) << every;
    }
    EXPECT_EQ(metrics_url_host(":0"), "localhost");
    EXPECT_EQ(metrics_url_host("127.0.0.1:9464"), "127.0.0.1");
    EXPECT_EQ(metrics_url_host("[::1]:9464"), "[::1]");
    EXPECT_EQ(metrics_url_host("[::]:9464"), "[::]");
}

TEST(ProcessMetrics, proc_stat_fields_become_seconds_and_bytes) {
    // proc(5): a comm with a space and a parenthesis; utime 300, stime 100
    // ticks, starttime 5000 ticks, vsize 1 MiB, rss 256 pages.
    std::string line =
        "4242 (vnet d) x) S 1 4242 4242 0 -1 4194560 10 0 0 0 300 100 0 0 20 0 3 0 "
        "5000 1048576 256";
    for (int i = 0; i < 27; ++i) {
        line += " 0";
    }
    const std::optional<ProcessSample> s = parse_proc_stat(line, 100, 4096, 1'700'000'000);
    ASSERT_TRUE(s);
    EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);
    EXPECT_DOUBLE_EQ(s->start_time_seconds, 1'700'000'050.0);
    EXPECT_EQ(s->virtual_bytes, 1048576u);
    EXPECT_EQ(s->resident_bytes, 256u * 4096);
    EXPECT_FALSE(parse_proc_stat("4242 (vnetd) S 1 2", 100, 4096, 0));
    EXPECT_FALSE(parse_proc_stat("garbage", 100, 4096, 0));
}

TEST(ProcessMetrics, this_process_has_the_usual_families) {
    const std::optional<ProcessSample> s = read_process_sample();
    ASSERT_TRUE(s);
    EXPECT_GT(s->resident_bytes, 0u);
    EXPECT_GE(s->open_fds, 3u);  // stdin, stdout, stderr at least
    EXPECT_GE(s->max_fds, s->open_fds);
    const double now = static_cast<double>(::time(nullptr));
    EXPECT_LE(s->start_time_seconds, now + 1);
    EXPECT_GT(s->start_time_seconds, now - 3600);  // this test binary started just now
    MetricFamilies out;
    add_process_families(*s, out);
    std::vector<std::string> names;
    for (const MetricFamily& f : out) {
        names.push_back(f.name);
        EXPECT_EQ(f.metric.size(), 1u) << f.name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"process_cpu_seconds_total",
                                               "process_resident_memory_bytes",
                                               "process_virtual_memory_bytes", "process_open_fds",
                                               "process_max_fds", "process_start_time_seconds"}));
    EXPECT_EQ(out[0].type, MetricType::Counter);
}

}  // namespace
}  // namespace vnet::control
