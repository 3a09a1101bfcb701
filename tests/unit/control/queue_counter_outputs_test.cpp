// The counter table drives every reader of the queue counters: each row is
// in the stats JSON where its stats_pointer says, is a Prometheus family of
// its name and help, and, if it asks for one, a column of `vnetctl show`;
// the JSON has nothing the rows do not name.
#include <gtest/gtest.h>

#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "control/metrics/metrics_families.hpp"
#include "control/metrics/stats_report.hpp"
#include "packet/queue_counter_table.hpp"
#include "ports/null/null_port.hpp"
#include "show_text.hpp"

namespace vnet::control {
namespace {

using nlohmann::json;
using packet::CounterShape;
using packet::kQueueCounterRows;
using packet::QueueCounterRow;
using prometheus::ClientMetric;
using prometheus::MetricFamily;

// The value every cell of the port's queue 0 RX counters gets: 101, 102, ... in table order.
struct NumberedPort {
    ports::NullPort port{"p0", 1};
    std::vector<std::vector<uint64_t>> values;  // per row, per cell

    NumberedPort() {
        uint64_t value = 100;
        for (const QueueCounterRow& row : kQueueCounterRows) {
            values.emplace_back();
            for (packet::Counter& cell : row.cells(port.rx_counters(0))) {
                cell.add(++value);
                values.back().push_back(value);
            }
        }
    }
};

size_t count_numbers(const json& j) {
    if (j.is_number()) {
        return 1;
    }
    size_t n = 0;
    for (const json& child : j) {
        n += count_numbers(child);
    }
    return n;
}

TEST(QueueCounterOutputs, every_row_is_in_the_stats_json_and_nothing_else_is) {
    NumberedPort p;
    const json rx = port_stats_json(p.port, "null")["queues"][0]["rx"];
    for (size_t r = 0; r < kQueueCounterRows.size(); ++r) {
        const QueueCounterRow& row = kQueueCounterRows[r];
        const json::json_pointer at{std::string(row.stats_pointer)};
        ASSERT_TRUE(rx.contains(at)) << row.name;
        if (row.shape == CounterShape::single) {
            EXPECT_EQ(rx[at], p.values[r][0]) << row.name;
            continue;
        }
        ASSERT_EQ(rx[at].size(), row.cell_count()) << row.name;
        for (size_t i = 0; i < row.cell_count(); ++i) {
            EXPECT_EQ(rx[at][std::string(row.cell_label(i))], p.values[r][i])
                << row.name << " " << row.cell_label(i);
        }
    }
    EXPECT_EQ(count_numbers(rx), packet::queue_counter_cells());
}

const MetricFamily* find_family(const MetricFamilies& families, const std::string& name) {
    for (const MetricFamily& f : families) {
        if (f.name == name) {
            return &f;
        }
    }
    return nullptr;
}

// The queue 0 RX sample; of a row by reason, the one labelled `reason`.
const ClientMetric* rx_sample(const MetricFamily& f, std::string_view reason = {}) {
    for (const ClientMetric& m : f.metric) {
        bool rx = false;
        bool reason_matches = reason.empty();
        for (const ClientMetric::Label& l : m.label) {
            rx = rx || (l.name == "direction" && l.value == "rx");
            reason_matches = reason_matches || (l.name == "reason" && l.value == reason);
        }
        if (rx && reason_matches) {
            return &m;
        }
    }
    return nullptr;
}

TEST(QueueCounterOutputs, every_row_is_a_prometheus_family_of_its_name_and_help) {
    NumberedPort p;
    MetricFamilies families;
    add_port_families({{&p.port, "null", std::nullopt}}, families);
    for (size_t r = 0; r < kQueueCounterRows.size(); ++r) {
        const QueueCounterRow& row = kQueueCounterRows[r];
        const bool histogram = row.shape == CounterShape::burst_sizes;
        const std::string name =
            "vnetd_port_" + std::string(row.name) + (histogram ? "" : "_total");
        const MetricFamily* f = find_family(families, name);
        ASSERT_NE(f, nullptr) << name;
        EXPECT_EQ(f->help, row.help) << name;
        if (histogram) {
            const ClientMetric* m = rx_sample(*f);
            ASSERT_NE(m, nullptr) << name;
            ASSERT_EQ(m->histogram.bucket.size(), row.cell_count()) << name;
            uint64_t below = 0;
            for (size_t i = 0; i < row.cell_count(); ++i) {
                EXPECT_EQ(m->histogram.bucket[i].cumulative_count - below, p.values[r][i])
                    << name << " " << row.cell_label(i);
                below = m->histogram.bucket[i].cumulative_count;
            }
            continue;
        }
        for (size_t i = 0; i < row.cell_count(); ++i) {
            const ClientMetric* m = rx_sample(*f, row.cell_label(i));
            ASSERT_NE(m, nullptr) << name << " " << row.cell_label(i);
            EXPECT_EQ(m->counter.value, static_cast<double>(p.values[r][i])) << name;
        }
    }
}

TEST(QueueCounterOutputs, every_show_row_is_a_column_of_vnetctl_show_with_its_value) {
    NumberedPort p;
    std::ostringstream text;
    vnetctl::print_show(json::array({{{"name", "p0"},
                                      {"type", "null"},
                                      {"queue_pairs", 1},
                                      {"stats", port_stats_json(p.port, "null")}}}),
                        text);
    // The counter table's header line and its queue 0 RX line, as words.
    std::vector<std::string> header;
    std::vector<std::string> rx;
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
        if (w.size() > 2 && w[0] == "q" && w[1] == "dir") {
            header = w;
        } else if (!header.empty() && rx.empty() && w.size() == header.size() && w[1] == "rx") {
            rx = w;
        }
    }
    ASSERT_FALSE(rx.empty()) << text.str();
    size_t column = 2;  // after q and dir, the rows' columns in table order
    for (size_t r = 0; r < kQueueCounterRows.size(); ++r) {
        const QueueCounterRow& row = kQueueCounterRows[r];
        if (row.show_column == packet::ShowColumn::no) {
            continue;
        }
        ASSERT_LT(column, header.size()) << row.name;
        EXPECT_EQ(header[column], row.name);
        EXPECT_EQ(rx[column], std::to_string(p.values[r][0])) << row.name;
        ++column;
    }
    EXPECT_EQ(header.size(), column + 1) << "the shown rows, then the drops column";
    EXPECT_EQ(header.back(), "drops");
}

}  // namespace
}  // namespace vnet::control
