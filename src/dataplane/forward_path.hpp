// ForwardPath: moves packets one way from a (port, queue) to a (port, queue),
// run to completion by the worker that owns both queues.
//
// The style follows the source: a source holding packets in memory (guest
// TX) is pushed to the destination in bursts of up to tx_batch; a source
// that needs buffers (a tap) is filled one packet at a time into the
// destination's buffers, with one publish per burst. Either way a turn ends
// after weight_packets packets or weight_bytes bytes (VHOST_NET_PKT_WEIGHT /
// VHOST_NET_WEIGHT) so one ring cannot starve the others.
#pragma once

#include <cstdint>

#include "ports/packet_burst.hpp"
#include "ports/port.hpp"

namespace vnet::dataplane {

struct PathOptions {
    uint16_t tx_batch = 64;           // VHOST_NET_BATCH
    uint32_t weight_packets = 256;    // VHOST_NET_PKT_WEIGHT
    uint32_t weight_bytes = 0x80000;  // VHOST_NET_WEIGHT
};

// Why a turn ended: what the path waits for before it can make progress.
enum class PathWait : uint8_t {
    none,         // budget used up: more work is likely there, poll again
    source,       // the source had nothing more
    destination,  // the destination is full (tap EAGAIN, guest posted no buffers)
    not_ready,    // one end is not ready (guest not connected / ring stopped)
};

struct TurnResult {
    uint32_t packets = 0;
    uint64_t bytes = 0;
    PathWait wait = PathWait::none;
};

class ForwardPath {
public:
    enum class Style : uint8_t { push, fill };

    ForwardPath(ports::Port& source, uint16_t source_queue, ports::Port& destination,
                uint16_t destination_queue, const PathOptions& options);

    TurnResult run_turn();
    // run_turn() touched lost guest memory at `address` (SIGBUS): drop what
    // the path holds and let the port that owns the memory stop its queue.
    void on_guest_fault(uintptr_t address);

    // The fd and events to sleep on after a turn that ended in `wait`.
    ports::WaitSpec wait_spec(PathWait wait) const;

    Style style() const { return style_; }
    ports::Port& source() const { return source_; }
    ports::Port& destination() const { return destination_; }
    uint16_t source_queue() const { return source_queue_; }
    uint16_t destination_queue() const { return destination_queue_; }
    const PathOptions& options() const { return options_; }
    void set_options(const PathOptions& options) { options_ = options; }

private:
    TurnResult push_turn();
    TurnResult fill_turn();

    ports::Port& source_;
    uint16_t source_queue_;
    ports::Port& destination_;
    uint16_t destination_queue_;
    PathOptions options_;
    Style style_;
    // Packets taken from the source but not yet accepted by the destination
    // (a tap that said EAGAIN): kept, in order, for the next turn.
    ports::PacketBurst pending_;
    uint32_t pending_generation_ = 0;
};

}  // namespace vnet::dataplane
