// ForwardPath: moves packets one way from a (port, queue) to a (port, queue),
// run to completion by the worker that owns both queues.
//
// The style follows what the two queue pairs can do (ports/capabilities.hpp),
// never what kind of port they are: a reader feeding a buffer lender (a tap
// feeding a guest or a discard port) is filled one packet at a time
// straight into the lent buffers, with one publish per burst; otherwise a
// burst source feeding a burst sink (guest TX, or a tap feeding another tap
// from its own staging slots) is pushed in bursts of up to tx_batch.
// Either way a turn ends after weight_packets packets or weight_bytes bytes
// (VHOST_NET_PKT_WEIGHT / VHOST_NET_WEIGHT) so one ring cannot starve the
// others.
//
// On the way to a tap, a pushed burst may go through user-space GRO
// (gro::BurstCoalescer): a tap write is one packet, so fewer, bigger writes
// are the user-space form of what NAPI+GRO gives the kernel.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "dataplane/engine.hpp"
#include "dataplane/ingress_policer.hpp"
#include "gro/burst_coalescer.hpp"
#include "io/lone_frames.hpp"
#include "packet/packet_burst.hpp"
#include "ports/port.hpp"
#include "ports/queue_pair_options.hpp"

namespace vnet::dataplane {

class ForwardPath final : public Engine {
public:
    enum class Style : uint8_t { push, fill };

    // How packets can travel from `source` to `destination`: fill when the
    // source reads and the destination lends buffers (the read lands where
    // the packet stays), push when the source hands out bursts and the
    // destination takes them; none (nullopt) when the source produces
    // nothing the destination can take (a discard port as a source).
    static std::optional<Style> style_between(const ports::QueuePairCapabilities& source,
                                              const ports::QueuePairCapabilities& destination);

    // Throws std::invalid_argument if style_between has no style for them.
    ForwardPath(ports::Port& source, uint16_t source_queue, ports::Port& destination,
                uint16_t destination_queue, const ports::QueuePairOptions& options);

    // Engine. A path has no use for the round clock.
    TurnResult run_turn(uint64_t now_ns) override;
    // Drops what the path holds; both ports stop the queue whose memory it is.
    void on_guest_fault(uintptr_t address) override;
    // Arms the end the last turn waited on and wants its fd; false when the
    // last turn ran out of budget or the end has work again.
    bool prepare_sleep(const Want& want) override;
    // The destination's guest RX pacing (if it plays RxPacing), from options().
    void configure_destinations() override;
    uint64_t held_rx_deadline() const override;
    void publish_held_rx() override;
    void publish_rx_before_sleep() override;

    // The path is about to go away (a port removed at run time) with packets
    // the destination did not take yet: they go back to the source as
    // drops (no_destination), so a source that stays loses no buffers.
    void abandon_pending();

    // The fd and events to sleep on after a turn that ended in `wait`.
    ports::WaitSpec wait_spec(PathWait wait) const;

    Style style() const { return style_; }
    ports::Port& source() const { return source_; }
    ports::Port& destination() const { return destination_; }
    uint16_t source_queue() const { return source_queue_; }
    uint16_t destination_queue() const { return destination_queue_; }
    const ports::QueuePairOptions& options() const { return options_; }
    void set_options(const ports::QueuePairOptions& options) { options_ = options; }

    // Ingress policing of what this path takes from its source: the
    // source port's bucket, shared by all its paths (nullptr: none). It
    // must outlive the path. On the worker thread (a command) or while the
    // worker is stopped. Push paths only: a fill path (a tap read into a
    // guest's buffers) is not policed.
    void set_ingress_policer(IngressPolicer* policer) { policer_ = policer; }
    const IngressPolicer* ingress_policer() const { return policer_; }

private:
    TurnResult push_turn();
    TurnResult fill_turn();
    // A batch of the fill turn: lends up to read_batch_ buffers at once and
    // has the reader fill them (one system call); false when the lender
    // cannot lend that way, and the turn goes one packet at a time.
    bool fill_batch(uint32_t max_packet, TurnResult& turn, uint16_t& in_burst);
    // Takes packets from the source into pending_: up to the batch size,
    // peeking the source again while it has more (tx_peek). False if none.
    bool take_burst();
    // Drops the packets of a freshly taken pending_ that the policer does
    // not pass; returns how many.
    uint16_t police_pending();
    // Hands pending_ to the destination (through GRO when on); returns how
    // many of pending_'s packets were taken.
    uint16_t transmit_pending();
    uint16_t transmit_one_by_one();

    ports::Port& source_;
    uint16_t source_queue_;
    ports::Port& destination_;
    uint16_t destination_queue_;
    ports::QueuePairOptions options_;
    Style style_;
    PathWait last_wait_ = PathWait::none;  // why the last turn ended
    // The roles the style uses, found once at construction: push uses the
    // first two, fill the last two; the others stay null.
    ports::BurstSource* burst_source_ = nullptr;
    ports::BurstSink* burst_sink_ = nullptr;
    ports::Reader* reader_ = nullptr;
    ports::BufferLender* buffer_lender_ = nullptr;
    // The destination's guest RX pacing, whatever the style; null if it
    // plays none (a tap delivers at once).
    ports::RxPacing* rx_pacing_ = nullptr;
    // Packets taken from the source but not yet accepted by the destination
    // (a tap that said EAGAIN): kept, in order, for the next turn.
    packet::PacketBurst pending_;
    uint32_t pending_generation_ = 0;
    // Packets per burst: tx_batch, or 1 in the per-packet mode (tx_batch 0).
    uint16_t burst_size_;
    // GRO state, only for a destination that takes GSO frames, with gro on.
    struct Gro {
        gro::CoalesceOptions options;
        gro::BurstCoalescer coalescer;
        packet::PacketBurst merged;
    };
    std::unique_ptr<Gro> gro_;
    // tx_peek off: each packet goes to the destination in a burst of its own.
    std::unique_ptr<packet::PacketBurst> single_;
    // Fill style: the buffers of one batched read, and how many to ask for
    // next. The batch grows (doubling, up to the burst) while the reader
    // fills every buffer and falls back to what it filled when it runs
    // dry, so a trickle costs one readv per packet (cheaper than an
    // io_uring_enter for one) and a flood one system call per burst.
    struct FillBatch {
        packet::PacketBurst buffers;
        std::array<int, packet::kMaxBurstPackets> lengths{};
        uint16_t size = 1;
    };
    std::unique_ptr<FillBatch> fill_batch_;
    // Fill style: whether the source's frames come one at a time.
    io::LoneFrames lone_;
    IngressPolicer* policer_ = nullptr;
};

}  // namespace vnet::dataplane
