// A switch's counters, in one struct: MAC table events, flooding and drops
// by packet::DropReason. Written by the one worker that owns the switch,
// read by the control thread (vnetctl, stats, metrics) through snapshot():
// relaxed atomics updated with load+store, as packet::QueueCounters are.
// kSwitchCounterFields names the event counters once for every reader.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "packet/queue_counters.hpp"

namespace vnet::dataplane::switching {

struct SwitchCounters {
    packet::Counter learned;     // a MAC seen for the first time (on its VLAN)
    packet::Counter moved;       // a known MAC seen on another port
    packet::Counter aged;        // a MAC forgotten after mac_aging_s without traffic
    packet::Counter table_full;  // a MAC not learned because the table was full
    packet::Counter flooded;     // packets sent to every port of their VLAN (once per packet)
    std::array<packet::Counter, packet::kDropReasonCount> drops;

    void count_drop(packet::DropReason r, uint64_t n = 1) { drops[static_cast<size_t>(r)].add(n); }

    struct Snapshot {
        uint64_t learned = 0;
        uint64_t moved = 0;
        uint64_t aged = 0;
        uint64_t table_full = 0;
        uint64_t flooded = 0;
        std::array<uint64_t, packet::kDropReasonCount> drops{};
        uint64_t drop(packet::DropReason r) const { return drops[static_cast<size_t>(r)]; }
    };
    Snapshot snapshot() const;
};

struct SwitchCounterField {
    std::string_view name;
    packet::Counter SwitchCounters::*counter;
    uint64_t SwitchCounters::Snapshot::*value;
    std::string_view help;  // the metric's help text
};
inline constexpr std::array<SwitchCounterField, 5> kSwitchCounterFields = {{
    {"learned", &SwitchCounters::learned, &SwitchCounters::Snapshot::learned,
     "MACs learned: seen as a source for the first time on their VLAN"},
    {"moved", &SwitchCounters::moved, &SwitchCounters::Snapshot::moved,
     "learned MACs seen as a source on another port"},
    {"aged", &SwitchCounters::aged, &SwitchCounters::Snapshot::aged,
     "MACs forgotten after mac_aging_s without traffic"},
    {"table_full", &SwitchCounters::table_full, &SwitchCounters::Snapshot::table_full,
     "MACs not learned because the table was full"},
    {"flooded", &SwitchCounters::flooded, &SwitchCounters::Snapshot::flooded,
     "packets flooded to every port of their VLAN (broadcast, multicast, unknown unicast)"},
}};

inline SwitchCounters::Snapshot SwitchCounters::snapshot() const {
    Snapshot s;
    for (const SwitchCounterField& f : kSwitchCounterFields) {
        s.*f.value = (this->*f.counter).get();
    }
    for (size_t r = 0; r < drops.size(); ++r) {
        s.drops[r] = drops[r].get();
    }
    return s;
}

}  // namespace vnet::dataplane::switching
