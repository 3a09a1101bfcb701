// Every member of QueueCounters once, as a row: its name, where the stats
// JSON keeps it, its metric's help text and its shape. QueueCounters::reset,
// the stats JSON (control/stats_report.cpp), the Prometheus families
// (control/metrics_families.cpp) and `vnetctl show`'s counter columns
// (apps/vnetctl/show_text.cpp) iterate these rows, so a new counter is its
// member in queue_counters.hpp and one row here; a member without a row
// does not compile. The datapath counts through the members and never reads
// this table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "packet/queue_counters.hpp"

namespace vnet::packet {

// How many Counters a row holds, and so how each reader renders it.
enum class CounterShape : uint8_t {
    single,       // one: a JSON number, a Prometheus counter
    by_reason,    // one per DropReason: a JSON object by reason, a counter labelled `reason`
    burst_sizes,  // one per histogram bucket: a JSON object by bucket, a Prometheus histogram
};

// Whether `vnetctl show` gives a single counter a column of its own.
enum class ShowColumn : bool { no, yes };

struct QueueCounterRow {
    using Single = Counter QueueCounters::*;
    using ByReason = std::array<Counter, kDropReasonCount> QueueCounters::*;
    using BurstSizes = std::array<Counter, kBurstHistogramBuckets> QueueCounters::*;

    // The metric is vnetd_port_<name>, with _total for a counter; vnetctl
    // show's column header.
    std::string_view name;
    // Where a direction's stats JSON holds it, as a JSON pointer (RFC 6901).
    std::string_view stats_pointer;
    std::string_view help;  // the metric's help text
    CounterShape shape;
    ShowColumn show_column;
    Single single;  // the member of the shape; the other two are null
    ByReason by_reason;
    BurstSizes burst_sizes;

    static constexpr QueueCounterRow counter(std::string_view name, std::string_view stats_pointer,
                                             std::string_view help, Single member,
                                             ShowColumn show_column) {
        return {name,        stats_pointer, help,    CounterShape::single,
                show_column, member,        nullptr, nullptr};
    }
    static constexpr QueueCounterRow reasons(std::string_view name, std::string_view stats_pointer,
                                             std::string_view help, ByReason member) {
        return {name,           stats_pointer, help,   CounterShape::by_reason,
                ShowColumn::no, nullptr,       member, nullptr};
    }
    static constexpr QueueCounterRow histogram(std::string_view name,
                                               std::string_view stats_pointer,
                                               std::string_view help, BurstSizes member) {
        return {name,           stats_pointer, help,    CounterShape::burst_sizes,
                ShowColumn::no, nullptr,       nullptr, member};
    }

    constexpr size_t cell_count() const {
        switch (shape) {
            case CounterShape::single:
                return 1;
            case CounterShape::by_reason:
                return kDropReasonCount;
            case CounterShape::burst_sizes:
                return kBurstHistogramBuckets;
        }
        return 0;
    }
    std::span<Counter> cells(QueueCounters& c) const {
        switch (shape) {
            case CounterShape::single:
                return {&(c.*single), 1};
            case CounterShape::by_reason:
                return c.*by_reason;
            case CounterShape::burst_sizes:
                return c.*burst_sizes;
        }
        return {};
    }
    std::span<const Counter> cells(const QueueCounters& c) const {
        return cells(const_cast<QueueCounters&>(c));
    }
    // Cell i's name within the row: a reason's or a bucket's; empty for a
    // single counter.
    std::string_view cell_label(size_t i) const {
        switch (shape) {
            case CounterShape::single:
                return {};
            case CounterShape::by_reason:
                return to_string(static_cast<DropReason>(i));
            case CounterShape::burst_sizes:
                return QueueCounters::histogram_label(i);
        }
        return {};
    }
};

// In the order of the Prometheus families and of vnetctl show's columns
// (the stats JSON sorts its keys).
inline constexpr std::array kQueueCounterRows = {
    QueueCounterRow::counter("packets", "/packets", "packets (rx: out of the port, tx: into it)",
                             &QueueCounters::packets, ShowColumn::yes),
    QueueCounterRow::counter("bytes", "/bytes",
                             "bytes, as the stats count them (rx: out of the port, tx: into it)",
                             &QueueCounters::bytes, ShowColumn::yes),
    QueueCounterRow::counter("bursts", "/bursts", "bursts of one or more packets",
                             &QueueCounters::bursts, ShowColumn::yes),
    QueueCounterRow::histogram("burst_size", "/burst_sizes", "packets per burst",
                               &QueueCounters::burst_sizes),
    QueueCounterRow::reasons("drops", "/drops", "packets dropped, by reason",
                             &QueueCounters::drops),
    QueueCounterRow::counter("gro_frames", "/gro/frames",
                             "frames written that user-space GRO merged from several segments",
                             &QueueCounters::gro_frames, ShowColumn::no),
    QueueCounterRow::counter("gro_segments", "/gro/segments", "segments those GRO frames carried",
                             &QueueCounters::gro_segments, ShowColumn::no),
    QueueCounterRow::counter(
        "publishes_coalesced", "/publishes_coalesced",
        "guest RX used-index publishes merged into a later one (rx_frames, rx_usecs)",
        &QueueCounters::publishes_coalesced, ShowColumn::no),
    QueueCounterRow::counter("kicks", "/kicks",
                             "guest kicks on the ring's kick eventfd, as the worker read them",
                             &QueueCounters::kicks, ShowColumn::yes),
    QueueCounterRow::counter("calls", "/calls",
                             "guest interrupts vnetd signalled (call eventfd writes)",
                             &QueueCounters::calls, ShowColumn::yes),
    QueueCounterRow::counter(
        "inflight_resumed", "/inflight_resumed",
        "chains a previous vnetd had taken and not completed, resubmitted at ring start",
        &QueueCounters::inflight_resumed, ShowColumn::no),
};

constexpr size_t queue_counter_cells() {
    size_t cells = 0;
    for (const QueueCounterRow& row : kQueueCounterRows) {
        cells += row.cell_count();
    }
    return cells;
}
// QueueCounters holds Counters only: as many as the rows have, or a member
// has no row (each row naming a member of its own is a unit test).
static_assert(sizeof(QueueCounters) == queue_counter_cells() * sizeof(Counter),
              "a QueueCounters member without a row in kQueueCounterRows");

}  // namespace vnet::packet
