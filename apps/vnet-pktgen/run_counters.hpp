// The numbers a run produces, as tables of {name, member}: the final report,
// the JSON object and any future consumer walk the same table, so a counter
// added here shows up everywhere with one name.
#pragma once

#include <array>
#include <cstdint>

namespace vnet::pktgen {

struct TxCounters {
    uint64_t packets = 0;     // completed: the back end returned them through the used ring
    uint64_t bytes = 0;       // frame bytes of completed packets (no virtio header, no FCS)
    uint64_t posted = 0;      // made available to the back end
    uint64_t kicks = 0;       // eventfd writes to the back end
    uint64_t ring_full = 0;   // passes that found no free descriptor
    uint64_t wakeups = 0;     // sleeps on the call eventfd
    uint64_t reconnects = 0;  // --reconnect: the back end hung up and a new one took over
};

struct RxCounters {
    uint64_t packets = 0;  // every frame received, ours or not
    uint64_t bytes = 0;
    uint64_t verified = 0;  // ours and intact
    uint64_t foreign = 0;   // not ours (no stamp): counted, not checked
    uint64_t bad = 0;       // sum of the bad_* reasons below
    uint64_t bad_length = 0;
    uint64_t bad_ip_checksum = 0;
    uint64_t bad_payload = 0;
    uint64_t bad_l4_checksum = 0;  // TCP checksum (full, or the partial sum with NEEDS_CSUM)
    // Segments of a frame the back end cut (no stamp; verified by their TCP
    // sequence number): in `verified` too, not in the loss count.
    uint64_t segments = 0;
    uint64_t bad_buffers = 0;  // malformed used entry: length or num_buffers impossible
    uint64_t lost = 0;         // sequence gaps not filled by late arrivals
    uint64_t reordered = 0;
    uint64_t kicks = 0;
    uint64_t wakeups = 0;
};

template <class Counters>
struct CounterField {
    const char* name;
    uint64_t Counters::*member;
};

inline constexpr std::array<CounterField<TxCounters>, 7> kTxCounterTable{{
    {"tx-packets", &TxCounters::packets},
    {"tx-bytes", &TxCounters::bytes},
    {"tx-posted", &TxCounters::posted},
    {"tx-kicks", &TxCounters::kicks},
    {"tx-ring-full", &TxCounters::ring_full},
    {"tx-wakeups", &TxCounters::wakeups},
    {"tx-reconnects", &TxCounters::reconnects},
}};

inline constexpr std::array<CounterField<RxCounters>, 15> kRxCounterTable{{
    {"rx-packets", &RxCounters::packets},
    {"rx-bytes", &RxCounters::bytes},
    {"rx-verified", &RxCounters::verified},
    {"rx-foreign", &RxCounters::foreign},
    {"rx-bad", &RxCounters::bad},
    {"rx-bad-length", &RxCounters::bad_length},
    {"rx-bad-ip-checksum", &RxCounters::bad_ip_checksum},
    {"rx-bad-payload", &RxCounters::bad_payload},
    {"rx-bad-l4-checksum", &RxCounters::bad_l4_checksum},
    {"rx-segments", &RxCounters::segments},
    {"rx-bad-buffers", &RxCounters::bad_buffers},
    {"rx-lost", &RxCounters::lost},
    {"rx-reordered", &RxCounters::reordered},
    {"rx-kicks", &RxCounters::kicks},
    {"rx-wakeups", &RxCounters::wakeups},
}};

}  // namespace vnet::pktgen
