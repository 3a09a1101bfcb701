#include "control/metrics/stats_report.hpp"

#include <cstdio>
#include <span>

#include "control/config/option_table.hpp"
#include "packet/queue_counter_table.hpp"

namespace vnet::control {

namespace {

// Every row of the counter table at its stats_pointer: a single counter as
// a number, the others as an object by reason or bucket label.
nlohmann::json counters_json(const packet::QueueCounters& c) {
    nlohmann::json j = nlohmann::json::object();
    for (const packet::QueueCounterRow& row : packet::kQueueCounterRows) {
        const std::span<const packet::Counter> cells = row.cells(c);
        nlohmann::json& at = j[nlohmann::json::json_pointer(std::string(row.stats_pointer))];
        if (row.shape == packet::CounterShape::single) {
            at = cells[0].get();
            continue;
        }
        at = nlohmann::json::object();
        for (size_t i = 0; i < cells.size(); ++i) {
            at[std::string(row.cell_label(i))] = cells[i].get();
        }
    }
    return j;
}

double mean_burst(const packet::QueueCounters& c) {
    uint64_t bursts = c.bursts.get();
    return bursts == 0 ? 0.0 : static_cast<double>(c.packets.get()) / static_cast<double>(bursts);
}

}  // namespace

nlohmann::json port_stats_json(ports::Port& port, std::string_view kind) {
    nlohmann::json j;
    j["name"] = port.name();
    j["kind"] = kind;
    nlohmann::json queues = nlohmann::json::array();
    for (uint16_t q = 0; q < port.queue_count(); ++q) {
        queues.push_back({{"queue", q},
                          {"rx", counters_json(port.rx_counters(q))},
                          {"tx", counters_json(port.tx_counters(q))}});
    }
    j["queues"] = queues;
    std::vector<ports::Port::Fact> facts;
    port.describe(facts);
    for (const ports::Port::Fact& f : facts) {
        std::visit([&](const auto& value) { j[f.section][f.key] = value; }, f.value);
    }
    return j;
}

std::string datapath_summary(const Config& config) {
    const nlohmann::json knobs = datapath_json(config);
    std::string out;
    for (auto it = knobs.begin(); it != knobs.end(); ++it) {
        out += (out.empty() ? "" : " ") + it.key() + "=" +
               (it->is_string() ? it->get<std::string>() : it->dump());
    }
    return out;
}

std::string stats_summary(const std::vector<ports::Port*>& ports, double seconds) {
    std::string out;
    char entry[256];
    for (ports::Port* p : ports) {
        for (uint16_t q = 0; q < p->queue_count(); ++q) {
            // A port offers more queue pairs than most guests enable: a queue
            // pair that never moved or dropped a packet is left out (q 0 is
            // always shown). The JSON has every queue.
            if (q != 0 && p->rx_counters(q).packets.get() + p->tx_counters(q).packets.get() +
                                  p->rx_counters(q).total_drops() +
                                  p->tx_counters(q).total_drops() ==
                              0) {
                continue;
            }
            for (int dir = 0; dir < 2; ++dir) {
                const packet::QueueCounters& c = dir == 0 ? p->rx_counters(q) : p->tx_counters(q);
                double pkts = static_cast<double>(c.packets.get());
                double bits = static_cast<double>(c.bytes.get()) * 8.0;
                std::snprintf(entry, sizeof(entry),
                              "%s%s/%u %s %llu pkts %.3f Mpps %.3f Gbit/s burst %.1f drops %llu",
                              out.empty() ? "" : "; ", p->name().c_str(), static_cast<unsigned>(q),
                              dir == 0 ? "rx" : "tx",
                              static_cast<unsigned long long>(c.packets.get()),
                              seconds > 0 ? pkts / seconds / 1e6 : 0.0,
                              seconds > 0 ? bits / seconds / 1e9 : 0.0, mean_burst(c),
                              static_cast<unsigned long long>(c.total_drops()));
                out += entry;
            }
        }
    }
    return out.empty() ? "no ports" : out;
}

}  // namespace vnet::control
