// Two vnet-pktgen guests on a switch under test: the receiver's MAC is
// announced first (one broadcast frame from it, so a learning switch knows
// its port), then the receiver connects, then the sender, which sends to
// that MAC as fast as the switch takes frames (or at rate_pps). The rate is
// the receiver's own count; the loss compares what the sender handed over
// (its used ring) with what the receiver got.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/vm_switch_systems.hpp"
#include "harness/pktgen_guest.hpp"
#include "harness/rate_meter.hpp"

namespace vnet::bench {

struct VmPairSpec {
    int from = 0;  // the sending port
    int to = 1;    // the receiving port
    uint32_t frame_bytes = 64;
    bool gso = false;           // the sender's frames are TCP GSO super-frames
    bool receiver_gso = false;  // the receiver takes them whole (GUEST_TSO4)
    bool sender_idle = true;    // SCHED_IDLE: the receiver is never starved
    int sender_cpu = 0;
    int receiver_cpu = 0;
    uint64_t rate_pps = 0;
    uint32_t src_mac_count = 1;
    std::string src_mac;      // the sender's (first) MAC; empty: guest_mac(from)
    uint32_t queue_size = 0;  // both guests' rings; 0: vnet-pktgen's default (256, QEMU's)
};

struct VmPairTotals {
    uint64_t sent = 0;      // the sender's used frames
    uint64_t received = 0;  // the receiver's frames
    double loss_pct = 0;
    nlohmann::json sender, receiver;
};

class VmPair {
public:
    VmPair(BenchContext& ctx, SwitchSystem& system, const std::string& label,
           const VmPairSpec& spec);

    // Frames per second (or bytes per second with `bytes`) at the receiver
    // over the context's window, after its warm-up.
    double receive_rate(bool bytes = false);
    PktgenGuest& sender() { return *sender_; }
    PktgenGuest& receiver() { return *receiver_; }
    std::string failure();
    // Stops the sender (it drains), then the receiver.
    VmPairTotals finish();

private:
    BenchContext& ctx_;
    SwitchSystem& system_;
    std::unique_ptr<PktgenGuest> receiver_;
    std::unique_ptr<PktgenGuest> sender_;
};

// A connected guest on port `port` that sends nothing (vnet-pktgen --rx on
// the load CPU, link up): a silent VM of the scale and idle tables.
std::unique_ptr<PktgenGuest> start_silent_guest(BenchContext& ctx, SwitchSystem& system, int port,
                                                const std::string& label);

// The standard window of a point.
RateWindow point_window(const BenchContext& ctx);

}  // namespace vnet::bench
