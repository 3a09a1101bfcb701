// NetTxQueue: a virtio-net transmit queue (the guest's TX ring, guest -> us)
// as a push-style burst source. receive_burst hands out each packet as
// iovecs into guest memory, header included; the destination writes or
// copies them and complete_burst gives the chains back with one publish.
//
// Pure and single-owner (the worker that owns the queue pair): it never
// makes a syscall or logs. Calls return decisions — "notify the guest" for
// the owner's eventfd write, a RingFault when the guest broke a rule (the
// queue has stopped itself; the owner logs it and breaks the device).
#pragma once

#include <array>
#include <cstdint>

#include "packet/packet_burst.hpp"
#include "packet/queue_counters.hpp"
#include "virtio/net/net_queue_config.hpp"
#include "virtio/net/ring_fault.hpp"
#include "virtio/ring/any_device_ring.hpp"

namespace vnet::virtio {

class NetTxQueue {
public:
    explicit NetTxQueue(packet::QueueCounters& counters) : counters_(&counters) {}

    // The token of a packet its port added to a TX burst itself (the RARP
    // announcement after a migration): completing it touches no used entry
    // and counts nothing. No chain has it (a chain takes at least one slot
    // and at most 32768).
    static constexpr uint32_t kNotFromRingToken = 0xffffffff;

    // A (re)started ring: everything but the counters starts over.
    void start(AnyDeviceRing ring, const NetQueueConfig& config);
    // Nothing touches the ring after this (a fault, lost memory, a stop).
    // The log goes with the memory it marks: nothing may mark it after a stop.
    void stop() {
        running_ = false;
        config_.log = {};
    }
    bool running() const { return running_; }
    // The ring as the owner left it (vnetctl show reads it between rounds).
    const AnyDeviceRing& ring() const { return ring_; }
    void set_calls_wanted(bool wanted) { config_.calls_wanted = wanted; }

    struct Received {
        uint16_t taken = 0;   // packets pushed into the burst
        bool notify = false;  // the guest wants a call: only dropped chains were completed
    };
    // Takes up to `max` packets. A chain the guest got wrong is completed
    // unsent and counted; a broken ring stops the queue (see take_fault).
    Received receive_burst(packet::PacketBurst& burst, uint16_t max);
    // The first `done` packets of `burst` (the oldest ones handed out) left
    // guest memory: one publish. Returns whether to notify the guest.
    bool complete_burst(const packet::PacketBurst& burst, uint16_t done);
    // Before the owner sleeps on the kick fd: true if it may (no new work
    // arrived while kicks were off).
    bool arm_kicks();

    // At stop, while the memory is still mapped: completes what a
    // destination still holds as dropped (`held_drop`) and publishes.
    // Returns the packets the guest queued that were never taken.
    uint16_t finish(packet::DropReason held_drop);
    // The guest's memory is gone: what a destination still held is dropped
    // without a used entry.
    void abandon();
    uint32_t vring_base() const;

    // The rule the guest broke, once, after a call that stopped the queue.
    const RingFault* take_fault() {
        if (!fault_new_) {
            return nullptr;
        }
        fault_new_ = false;
        return &fault_;
    }

private:
    // A chain a destination holds: what its used entry needs.
    struct InFlight {
        uint16_t id;
        uint16_t slots;
        bool sent;  // false: completed unsent, waiting for the chains before it
    };
    // A chain the guest got wrong is completed unsent, but never ahead of a
    // chain taken before it: VIRTIO_F_IN_ORDER drivers free buffers by
    // position, and in no order would the guest reuse a buffer still held.
    template <typename R>
    void complete_unsent(R& ring, const PoppedChain& chain);
    // Completes the oldest in-flight chains: up to `sent` of those a
    // destination took, and every unsent one up to the next chain still
    // held. Returns how many sent ones it completed.
    template <typename R>
    uint16_t complete_oldest(R& ring, uint16_t sent);
    // receive_burst's common chains, from the first of `chains` on: readable
    // only, more than a header, their iovecs where the pop put them (none
    // before them completed unsent). Each goes into the burst and in
    // flight; returns how many, stopping at any other. A loop with nothing
    // else in it, so that its values stay in registers.
    [[gnu::noinline]] uint16_t take_packet_run(std::span<const PoppedChain> chains,
                                               packet::PacketBurst& burst);
    // Chains handed out and not yet completed (cold: it walks the list).
    uint16_t sent_in_flight() const;
    template <typename R>
    Received receive_burst_on(R& ring, packet::PacketBurst& burst, uint16_t max);
    template <typename R>
    bool publish(R& ring);
    void fail(RingFault fault);

    AnyDeviceRing ring_;
    NetQueueConfig config_;
    packet::QueueCounters* counters_;  // outlives restarts: counts are per port
    bool running_ = false;
    bool kicks_enabled_ = true;  // the guest's view: do we want kicks
    bool fault_new_ = false;
    RingFault fault_;
    uint16_t pending_used_ = 0;  // added since the last publish
    // Chains taken by receive_burst and not yet completed, oldest first
    // (completions come in the same order): the ones handed out, and those
    // completed unsent behind them.
    std::array<InFlight, packet::kMaxBurstPackets> in_flight_{};
    // What one pop_burst returns: a member, so a turn that finds the ring
    // empty does not clear a 64-chain array first.
    std::array<PoppedChain, packet::kMaxBurstPackets> popped_{};
    uint16_t in_flight_first_ = 0;
    uint16_t in_flight_count_ = 0;
    // Of those, the ones completed unsent: with none (the common burst),
    // completing `sent` chains is completing the `sent` oldest.
    uint16_t in_flight_unsent_ = 0;
};

}  // namespace vnet::virtio
