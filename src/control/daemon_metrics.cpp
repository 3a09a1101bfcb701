// The daemon's side of metrics (metrics.hpp): a collector whose sources run
// on the control thread, the ports', workers', switches' and process's sources, and the
// endpoint at --metrics-address; and the stats report (file and log table).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>

#include "control/config/option_table.hpp"
#include "control/daemon.hpp"
#include "control/metrics/build_info_family.hpp"
#include "control/metrics/listen_address.hpp"
#include "control/metrics/metrics_families.hpp"
#include "control/metrics/process_metrics.hpp"
#include "control/metrics/stats_report.hpp"

namespace vnet::control {

namespace {

// Longer than any scrape's work, short enough that a scrape arriving as
// the daemon stops does not hold up its exit.
constexpr std::chrono::seconds kScrapeWait{2};

}  // namespace

std::shared_ptr<MetricsCollector> Daemon::make_metrics_collector() {
    auto collector = MetricsCollector::make([this](std::function<void()> work) {
        auto done = std::make_shared<std::promise<void>>();
        std::future<void> finished = done->get_future();
        control_queue_.post([work = std::move(work), done] {
            work();
            done->set_value();
        });
        return finished.wait_for(kScrapeWait) == std::future_status::ready;
    });
    collector->add_source(&add_build_info_family);
    collector->add_source([this](MetricFamilies& out) {
        std::vector<PortMetricsView> views;
        for (PortEntry& p : ports_) {
            PortMetricsView view{p.port.get(), p.kind, std::nullopt};
            if (p.service) {
                view.connections = p.service->connections();
            }
            views.push_back(view);
        }
        add_port_families(views, out);
    });
    collector->add_source([this](MetricFamilies& out) {
        std::vector<WorkerMetricsSample> samples;
        for (const auto& w : workers_) {
            samples.push_back({w->busy_ns(), w->idle_ns(), w->rounds(), w->sleeps()});
        }
        add_worker_families(samples, out);
    });
    // The switches vnetd has at the scrape: a deleted one is no longer in
    // switches_, so its series go with it. The MAC table belongs to the
    // switch's worker: read there, between rounds, as switch.list does.
    collector->add_source([this](MetricFamilies& out) {
        std::vector<SwitchMetricsSample> samples;
        for (const SwitchEntry& s : switches_) {
            SwitchMetricsSample sample{s.name, 0, 0, {}};
            s.worker->run_sync([&] {
                const auto& core = s.datapath->core();
                sample.mac_entries = core.mac_table().size();
                sample.mac_table_size = core.options().mac_table_size;
                sample.counters = core.counters().snapshot();
            });
            samples.push_back(std::move(sample));
        }
        add_switch_families(samples, out);
    });
    collector->add_source([](MetricFamilies& out) {
        if (const std::optional<ProcessSample> s = read_process_sample()) {
            add_process_families(*s, out);
        }
    });
    return collector;
}

void Daemon::add_metrics_source(MetricsSource source) {
    metrics_->add_source(std::move(source));
}

void Daemon::open_metrics_endpoint() {
    if (config_.metrics_address.empty()) {
        return;
    }
    metrics_endpoint_ = std::make_unique<MetricsEndpoint>(config_.metrics_address, metrics_);
    // The port it really listens on: the address may have asked for any (0).
    const std::string host = metrics_url_host(config_.metrics_address);
    const std::vector<int> listening = metrics_endpoint_->listening_ports();
    log_->info("metrics at http://{}:{}/metrics", host, listening.empty() ? 0 : listening[0]);
}

// The stats report: the stats file ([daemon] stats_file) and the table
// logged every stats_interval_s and at exit.
nlohmann::json Daemon::stats() {
    nlohmann::json j;
    j["seconds"] = seconds_running();
    j["datapath"] = datapath_json(config_);
    j["ports"] = nlohmann::json::array();
    for (PortEntry& p : ports_) {
        j["ports"].push_back(port_stats_json(*p.port, p.kind));
    }
    return j;
}

double Daemon::seconds_running() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

void Daemon::report_stats(bool final_report) {
    const double seconds = seconds_running();
    std::vector<ports::Port*> all;
    for (PortEntry& p : ports_) {
        all.push_back(p.port.get());
    }
    // After an upgrade the stats file is the successor's.
    if (!config_.stats_file.empty() && !handed_over_) {
        std::string tmp = config_.stats_file + ".tmp";
        std::ofstream(tmp) << stats().dump(2) << "\n";
        std::rename(tmp.c_str(), config_.stats_file.c_str());
    }
    if (final_report) {
        log_->info("final stats after {:.1f} s ({}): {}", seconds, datapath_summary(config_),
                   stats_summary(all, seconds));
    } else if (config_.stats_interval_s > 0) {
        log_->info("stats after {:.1f} s: {}", seconds, stats_summary(all, seconds));
    }
}

}  // namespace vnet::control
