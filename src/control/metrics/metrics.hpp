// Metrics: vnetd's Prometheus endpoint (--metrics-address): /metrics in the
// text exposition format (prometheus-cpp's TextSerializer), served by GNU
// libmicrohttpd over IPv4, IPv6 or both.
//
// Nothing is pushed into prometheus objects by the datapath. At each scrape
// MetricsCollector asks its sources to build their metric families from
// what they read then (the relaxed atomics of packet::QueueCounters, the
// workers' time counters, the current port list), so the workers pay
// nothing for metrics, and a port added or removed at run time appears or
// disappears at the next scrape. A source is any callback: the daemon
// registers the ports' and the workers' (metrics_families.hpp), and any
// other part (the L2 switch's MAC tables) adds its own with add_source,
// without this file knowing it.
//
// Sources read state the control thread owns (the port list, services), so
// they run there: a scrape arrives on the HTTP server's thread and
// hands the whole collection to the control thread through the Runner.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct MHD_Daemon;

namespace vnet::control {

using MetricFamilies = std::vector<prometheus::MetricFamily>;
// Appends families (one per metric name, each name from one source only).
using MetricsSource = std::function<void(MetricFamilies& out)>;

class MetricsCollector final : public prometheus::Collectable,
                               public std::enable_shared_from_this<MetricsCollector> {
public:
    // Runs `work` on the thread the sources belong to and returns once it
    // ran, or false if it could not in time (that thread is busy or shutting
    // down; the scrape is then answered with no families). `work` may
    // outlive the call: it owns what it touches.
    using Runner = std::function<bool(std::function<void()> work)>;

    // Without a runner the sources run on the scraping thread (tests).
    static std::shared_ptr<MetricsCollector> make(Runner runner = {});

    // On the sources' thread (or before the endpoint serves).
    void add_source(MetricsSource source);

    // prometheus::Collectable: on a scraping thread.
    MetricFamilies Collect() const override;

private:
    explicit MetricsCollector(Runner runner) : runner_(std::move(runner)) {}
    MetricFamilies collect_here() const;

    Runner runner_;
    std::vector<MetricsSource> sources_;
};

// The HTTP side: libmicrohttpd listening on `address` (the metrics_address
// option: HOST:PORT, [IPv6]:PORT, :PORT) with one thread, answering GET or
// HEAD /metrics with `collector`'s families, 404 for any other path and 405
// for any other method. Throws std::runtime_error naming the address if it
// cannot listen there. Destroying it stops the server after the scrape in
// flight.
class MetricsEndpoint {
public:
    MetricsEndpoint(const std::string& address, std::shared_ptr<MetricsCollector> collector);
    ~MetricsEndpoint();
    MetricsEndpoint(const MetricsEndpoint&) = delete;
    MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

    // The ports it listens on (the real one when the address asked for 0).
    std::vector<int> listening_ports() const;

private:
    std::shared_ptr<MetricsCollector> collector_;
    MHD_Daemon* daemon_ = nullptr;
};

}  // namespace vnet::control
