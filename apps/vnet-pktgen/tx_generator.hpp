// The TX side of vnet-pktgen (testpmd txonly): keep the TX ring full of
// stamped frames, a burst per avail publish and at most one kick per burst,
// and take back what the back end has used.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "frontend/net_driver.hpp"
#include "frontend/packet_builder.hpp"
#include "periodic_stats.hpp"
#include "pktgen_options.hpp"
#include "run_control.hpp"
#include "run_counters.hpp"

namespace vnet::pktgen {

template <frontend::DriverRing Ring>
class TxGenerator {
public:
    // `reconnect` (may be empty): called when the back end hung up; true if
    // the device is up again on a new connection (NetDriver::reconnect).
    TxGenerator(frontend::NetDriver& device, const PktgenOptions& options,
                std::function<bool()> reconnect = {});

    // Sends until --count, --duration or a stop signal, then waits up to
    // --drain-timeout for the back end to use everything in flight.
    TxCounters run();

private:
    uint32_t next_frame_len();
    uint16_t reclaim_used();
    uint32_t post_burst(uint32_t budget);
    void stamp_source_mac(std::span<std::byte> slot);
    void wait_for_pacer(const RatePacer& pacer, Clock::time_point now);
    void drain();

    frontend::NetDriver& device_;
    Ring& ring_;
    const PktgenOptions& options_;
    frontend::PacketBuilder builder_;
    std::vector<uint16_t> free_slots_;      // stack of slot numbers (= cookies)
    std::vector<uint32_t> slot_frame_len_;  // frame bytes each in-flight slot carries
    std::vector<frontend::Completion> completions_;
    uint64_t rng_state_;
    uint64_t next_seq_ = 0;
    uint32_t src_mac_index_ = 0;  // --src-mac-count: this frame's place in the cycle
    PeerWatch peer_;
    std::function<bool()> reconnect_;
    TxCounters counters_;
};

}  // namespace vnet::pktgen
