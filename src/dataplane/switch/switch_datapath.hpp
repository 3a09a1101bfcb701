// SwitchDatapath: one L2 switch on the datapath, run by the one worker that
// owns it (ownership model: docs/ARCHITECTURE.md "Threads and ownership").
// Every queue pair of every member port is served by that worker, so the
// MAC table, the plans and the counters are touched by one thread: no locks.
//
// A turn, per (member port, queue pair) that is a burst source: take a
// burst, let SwitchCore classify it into one group per destination, hand
// each group to its port's BurstSink (queue 0 of the destination), then
// complete the burst to its source. Packets are never copied here: a group
// is a burst of iovecs into the source's memory; a frame whose tag changes
// (added toward a trunk, stripped toward an access port, rewritten from a
// priority tag) gets its first bytes (virtio-net header, MACs, tag) from a
// per-burst scratch line and the rest as slices of its own iovecs. A
// flooded frame is handed to several sinks: each copies it (a guest's RX
// ring) or writes it (a tap).
//
// A full destination does not stall the others: the groups it refused are
// held, with the source burst, for at most `hold_ns`, retried every round,
// then dropped as destination_full (no head-of-line blocking beyond that
// bound). A source whose held burst was partly dropped so takes, from
// then on, bursts of no more than what got through (at least one), doubled
// again after each burst delivered without a hold: what a slow destination
// cannot take is then left where it waits for nothing (a guest's TX ring,
// the kernel's tap queue, which drops its overflow before any copy)
// instead of being read, or copied out of a tap, only to be dropped.
// A destination that has taken nothing for `stall_ns` when a hold
// runs out is stalled: it is not held for again until it takes a frame, so
// a guest that stopped its RX ring for minutes costs each burst one refused
// try, not hold_ns of spinning. A merely slow guest (descheduled for a few
// milliseconds) is never stalled: it keeps pacing its sources.
// Cross-connects (ForwardPath) keep their lossless backpressure.
//
// adaptive_rx: a guest's call is deferred while the switch's sources keep
// sending and the guest has room (NetRxQueue::set_adaptive_calls); the
// round that finds every source dry, or a deferral's deadline, makes it.
// On one CPU shared by the guests this is what keeps a receiver asleep
// until its ring is nearly full, instead of waking it (and stopping the
// sender) once per burst.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/engine.hpp"
#include "dataplane/switch/switch_core.hpp"
#include "ports/port.hpp"
#include "ports/queue_pair_options.hpp"

namespace vnet::dataplane::switching {

// How long groups for a full destination are held before they are dropped:
// long enough for a guest's NAPI poll to post buffers again, short enough
// that the source ring (and every destination it feeds) keeps moving.
inline constexpr uint64_t kDefaultHoldNs = 100000;
// Far beyond a scheduler's time slice (a receiver on a busy host waits
// several milliseconds for its CPU), far below a stop a user would notice.
inline constexpr uint64_t kDefaultStallNs = 100000000;
// A source found empty this many polls in a row is idle: it is looked at
// once per kIdlePollNs, not every round. Each poll of a silent guest's
// ring costs a few cache lines (its queue state, its avail index), so on a
// switch with many silent guests polling them every round would take much
// of a busy worker's time (docs/BENCHMARKS.md, "Where the defaults come
// from"). A guest that starts sending waits at most
// this long more for its first burst; one that keeps sending is never idle.
inline constexpr uint16_t kEmptyPollsBeforeIdle = 16;
inline constexpr uint64_t kIdlePollNs = 4000;

struct SwitchDatapathOptions {
    SwitchOptions core;
    // The datapath's per-queue-pair options, as for a cross-connect: its
    // tx_batch is the burst per ingress queue (0 is taken as 1),
    // weight_packets the packets per ingress queue per turn, adaptive_rx
    // defers guests' calls while the sources keep sending.
    ports::QueuePairOptions queue_pair;
    uint64_t hold_ns = kDefaultHoldNs;
    uint64_t stall_ns = kDefaultStallNs;
};

class SwitchDatapath final : public Engine {
public:
    SwitchDatapath(std::string name, const SwitchDatapathOptions& options);
    ~SwitchDatapath() override;

    const std::string& name() const { return name_; }

    // ---- the owning worker's thread (a command), or while it is stopped --
    // Makes `port` a member: its queue 0 must be a burst sink; each queue
    // pair that is a burst source feeds the switch. Returns the member id.
    // Throws std::invalid_argument (no sink, already a member) or
    // std::length_error (switch full).
    uint16_t attach(ports::Port& port, MemberConfig config);
    // `port` leaves: what it still held is completed to it, what others
    // held for it is dropped as no_destination, its MACs are forgotten.
    // False if it was no member.
    bool detach(const ports::Port& port);
    bool has_member(const ports::Port& port) const;
    // Forgets the learned MACs of every member, or of `port` only (nothing
    // if it is no member); how many were forgotten.
    uint32_t forget_macs(const ports::Port* port);
    // The MAC table itself, for a control plane that tells the switch where
    // MACs are (the EVPN sync, control/switches/evpn/).
    MacTable& mac_table() { return core_.mac_table(); }

    // ---- Engine ------------------------------------------------------------
    // `now_ns` is the worker's round clock (tests pass their own): MAC
    // learning and aging, hold deadlines, deferred calls. A turn that left
    // a burst held for a full destination ends in PathWait::holding.
    TurnResult run_turn(uint64_t now_ns) override;
    // Arms each idle source (a guest turns kicks back on) and wants its
    // kick fd; false while a burst is held or a source had more.
    bool prepare_sleep(const Want& want) override;
    // Drops what is held; each member port stops the queue that owns the memory.
    void on_guest_fault(uintptr_t address) override;

    const SwitchCore& core() const { return core_; }
    // The member's port, nullptr for a free id.
    const ports::Port* member_port(uint16_t member) const;

private:
    struct Member {
        ports::Port* port = nullptr;
        ports::BurstSink* sink = nullptr;
        // Its guest RX pacing (adaptive_rx's deferred calls); null: none.
        ports::RxPacing* pacing = nullptr;
        // It refused a frame and took none since refusing_since.
        bool refusing = false;
        uint64_t refusing_since = 0;
        // A hold ran out after it had refused for stall_ns: its groups get
        // one try each and no hold until it takes a frame again.
        bool stalled = false;
        // It took frames since its last call: it is in pending_calls_.
        bool call_pending = false;
    };
    struct Ingress {
        ports::Port* port;
        uint16_t queue;
        uint16_t member;
        // Idle polling (kEmptyPollsBeforeIdle), first so that a skipped
        // source costs the one line run_turn reads.
        uint16_t empty_polls = 0;
        uint64_t next_poll_ns = 0;
        ports::BurstSource* source;
        packet::PacketBurst burst;
        BurstPlan plan;
        uint32_t generation = 0;
        bool holding = false;
        uint64_t hold_deadline = 0;
        PathWait last_wait = PathWait::none;
        // The most packets its next burst takes (1..burst_): cut to what a
        // hold that ran out let through, doubled after a burst taken whole.
        uint16_t burst_limit = packet::kMaxBurstPackets;
    };
    // The turn of a source whose queue runs (run_turn checked it).
    TurnResult ingress_turn(Ingress& in, uint64_t now);
    // Hands every group of `in`'s plan to its destination; true when all
    // were taken (or dropped), false when some destination was full.
    bool deliver(Ingress& in, uint64_t now, TurnResult& turn);
    bool deliver_group(Ingress& in, EgressGroup& group, uint64_t now, TurnResult& turn);
    // Builds the first packets of `group` into out_ (at most `limit`, and as
    // many as its iovecs hold); returns the entry index where it stopped.
    // (Not const: a frame sent as it came points out_ at its verdict's prefix.)
    uint16_t build_group(Ingress& in, const EgressGroup& group, uint16_t limit);
    // build_group's common frames, from entry `from` until `end`: each one
    // leaving tagged as it came, its payload in its first piece, sent as
    // its verdict's prefix and one slice. Returns the entry it stopped at
    // (`end`, or one that build_entry decides). A loop with nothing else
    // in it, so that its values stay in registers.
    [[gnu::noinline]] uint16_t build_plain_run(Ingress& in, const EgressGroup& group, uint16_t from,
                                               uint16_t end);
    // Any one entry `e` of a group into out_: a line rewritten for its tag,
    // a payload over several pieces. False: no room left (the rest goes in
    // the next burst); true: built, or dropped and counted.
    bool build_entry(Ingress& in, EgressEntry entry, uint16_t e);
    // A frame whose tag changes: its line (virtio-net header with offsets
    // moved, the classified Ethernet header, tagged when `tagged`) written
    // into `line`, which it returns.
    static constexpr size_t kLineSize = 32;
    static uint8_t* retag_line(const PacketVerdict& v, uint16_t header, bool tagged,
                               std::array<uint8_t, kLineSize>& line);
    // Drops what `group` still holds as `reason` (switch and destination counters).
    void drop_group(EgressGroup& group, packet::DropReason reason);
    void finish(Ingress& in);
    // Makes the members' deferred calls that are due: all of them when the
    // sources ran dry (`all`), else those past their deadline.
    void make_deferred_calls(bool all, uint64_t now);

    std::string name_;
    SwitchDatapathOptions options_;
    uint16_t burst_;           // queue_pair.tx_batch, 1..kMaxBurstPackets
    uint32_t weight_packets_;  // queue_pair.weight_packets, at least 1
    SwitchCore core_;
    std::array<Member, kMaxSwitchMembers> members_{};
    std::vector<std::unique_ptr<Ingress>> ingress_;
    std::vector<uint16_t> pending_calls_;  // members with call_pending (reserved: no allocation)
    // One destination's burst at a time, and the first bytes of each frame
    // whose tag changes, as sent: virtio-net header (<= 12), the classified
    // Ethernet header (14), a tag (4).
    packet::PacketBurst out_;
    std::array<uint16_t, packet::kMaxBurstPackets> out_entry_{};  // out_ packet -> group entry
    std::array<std::array<uint8_t, kLineSize>, packet::kMaxBurstPackets> scratch_{};
};

}  // namespace vnet::dataplane::switching
