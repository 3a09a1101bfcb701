#include "control/metrics/metrics.hpp"

#include <prometheus/exposer.h>

#include <stdexcept>

#include "control/metrics/listen_address.hpp"

namespace vnet::control {

std::shared_ptr<MetricsCollector> MetricsCollector::make(Runner runner) {
    return std::shared_ptr<MetricsCollector>(new MetricsCollector(std::move(runner)));
}

void MetricsCollector::add_source(MetricsSource source) {
    sources_.push_back(std::move(source));
}

MetricFamilies MetricsCollector::collect_here() const {
    MetricFamilies out;
    for (const MetricsSource& source : sources_) {
        source(out);
    }
    return out;
}

MetricFamilies MetricsCollector::Collect() const {
    if (!runner_) {
        return collect_here();
    }
    // The work may still run after a runner gave up waiting: it keeps the
    // collector and its result alive by itself.
    auto result = std::make_shared<MetricFamilies>();
    std::shared_ptr<const MetricsCollector> self = shared_from_this();
    if (!runner_([self, result] { *result = self->collect_here(); })) {
        return {};
    }
    return std::move(*result);
}

MetricsEndpoint::MetricsEndpoint(const std::string& address,
                                 std::shared_ptr<MetricsCollector> collector)
    : collector_(std::move(collector)) {
    // Refused in words first ("address in use", "bad address"): the
    // server's own error says nothing an operator can act on.
    const MetricsListenAddress listen = resolve_metrics_address(address);
    try {
        // One serving thread: scrapes are serialized on the control thread anyway.
        exposer_ = std::make_unique<prometheus::Exposer>(listen.server_spec, 1);
    } catch (const std::exception&) {
        if (listen.server_spec.starts_with('[')) {
            // Debian 12's civetweb, which prometheus-cpp serves with, is
            // built without USE_IPV6: it cannot parse an IPv6 address.
            throw std::runtime_error("metrics_address " + address +
                                     ": bad address (the HTTP server, civetweb, was built without "
                                     "IPv6 here; give an IPv4 address or :PORT)");
        }
        // Taken between the check and the server's own bind, most likely.
        throw std::runtime_error("metrics_address " + address + ": cannot listen");
    }
    exposer_->RegisterCollectable(collector_);
}

MetricsEndpoint::~MetricsEndpoint() = default;

std::vector<int> MetricsEndpoint::listening_ports() const {
    return exposer_->GetListeningPorts();
}

}  // namespace vnet::control
