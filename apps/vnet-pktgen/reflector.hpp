// --reflect: vnet-pktgen as the far end of a latency measurement, a guest
// that answers every frame. Each received frame goes back out unchanged but
// for its addresses: Ethernet source and destination swapped, and for
// IPv4 the addresses too, and for UDP the ports (a swap leaves both
// checksums valid: the one's-complement sum does not depend on order). So a
// UDP datagram sent to any address behind the guest comes back to its
// sender's socket as the reply.
//
// No copy and no allocation per frame: the RX buffer itself is posted on
// the TX ring (both live in the shared memory) and returns to the RX ring
// when the back end has sent it. The RX ring is refilled and the TX ring
// published once per pass, so a burst costs one kick each way. Mergeable
// buffers are off in this mode: each frame is one buffer.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "frontend/net_driver.hpp"
#include "pktgen_options.hpp"
#include "run_control.hpp"
#include "run_counters.hpp"

namespace vnet::pktgen {

struct ReflectCounters {
    uint64_t packets = 0;    // received and sent back
    uint64_t bytes = 0;      // frame bytes of those (no virtio header)
    uint64_t too_short = 0;  // shorter than an Ethernet header: returned to the RX ring
    uint64_t rx_kicks = 0;
    uint64_t tx_kicks = 0;
    uint64_t wakeups = 0;  // sleeps on the RX call eventfd
};

inline constexpr std::array<CounterField<ReflectCounters>, 6> kReflectCounterTable{{
    {"reflect-packets", &ReflectCounters::packets},
    {"reflect-bytes", &ReflectCounters::bytes},
    {"reflect-too-short", &ReflectCounters::too_short},
    {"reflect-rx-kicks", &ReflectCounters::rx_kicks},
    {"reflect-tx-kicks", &ReflectCounters::tx_kicks},
    {"reflect-wakeups", &ReflectCounters::wakeups},
}};

// Swaps the addresses of one frame in place (see above); frames it does
// not understand beyond Ethernet keep their payload as is.
void swap_frame_addresses(std::byte* frame, uint32_t len);

template <frontend::DriverRing Ring>
class Reflector {
public:
    Reflector(frontend::NetDriver& device, const PktgenOptions& options);

    // Reflects until --count packets, --duration or a stop signal.
    ReflectCounters run();

private:
    uint16_t take_sent();
    uint16_t reflect_received();
    void post_free_buffers();

    frontend::NetDriver& device_;
    Ring& rx_;
    Ring& tx_;
    const PktgenOptions& options_;
    std::vector<uint16_t> free_buffers_;  // RX buffers neither on the RX nor the TX ring
    std::vector<frontend::Completion> completions_;
    PeerWatch peer_;
    ReflectCounters counters_;
};

}  // namespace vnet::pktgen
