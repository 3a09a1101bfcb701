#include "packet/queue_counters.hpp"

#include "packet/queue_counter_table.hpp"

namespace vnet::packet {

std::string_view to_string(DropReason r) {
    switch (r) {
        case DropReason::bad_descriptor_chain:
            return "bad_descriptor_chain";
        case DropReason::packet_too_short:
            return "packet_too_short";
        case DropReason::too_many_segments:
            return "too_many_segments";
        case DropReason::tx_error:
            return "tx_error";
        case DropReason::rx_buffer_too_small:
            return "rx_buffer_too_small";
        case DropReason::rx_error:
            return "rx_error";
        case DropReason::no_destination:
            return "no_destination";
        case DropReason::queue_disabled:
            return "queue_disabled";
        case DropReason::bad_checksum_offsets:
            return "bad_checksum_offsets";
        case DropReason::bad_gso_header:
            return "bad_gso_header";
        case DropReason::gso_unsupported:
            return "gso_unsupported";
        case DropReason::policed:
            return "policed";
        case DropReason::vlan_not_allowed:
            return "vlan_not_allowed";
        case DropReason::spoofed:
            return "spoofed";
        case DropReason::invalid_source_mac:
            return "invalid_source_mac";
        case DropReason::destination_full:
            return "destination_full";
        case DropReason::device_gone:
            return "device_gone";
        case DropReason::count_:
            break;
    }
    return "unknown";
}

uint64_t QueueCounters::total_drops() const {
    uint64_t sum = 0;
    for (const Counter& c : drops) {
        sum += c.get();
    }
    return sum;
}

void QueueCounters::reset() {
    for (const QueueCounterRow& row : kQueueCounterRows) {
        for (Counter& c : row.cells(*this)) {
            c.reset();
        }
    }
}

std::string_view QueueCounters::histogram_label(size_t bucket) {
    static constexpr std::array<std::string_view, kBurstHistogramBuckets> kLabels = {
        "1", "2-3", "4-7", "8-15", "16-31", "32-63", "64+"};
    return bucket < kLabels.size() ? kLabels[bucket] : "?";
}

}  // namespace vnet::packet
