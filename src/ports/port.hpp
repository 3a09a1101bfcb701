// Port: a name plus queue pairs, each one end of forwarding paths.
//
// What a queue pair can do with packets is told by its capabilities
// (ports/capabilities.hpp: burst source, burst sink, buffer lender,
// reader), asked once when a path is built; the dataplane picks how packets
// travel from them. This interface holds what every queue pair has whatever
// it does: readiness, the fds to sleep on, counters; and the control-thread
// hooks by which the two ends of a cross-connect
// adapt to each other, so the daemon wires ports without knowing their kind.
//
// All datapath calls for one (port, queue) come from the single worker that
// owns the queue: no locks. Nothing here allocates, locks or logs per packet.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "packet/queue_counters.hpp"
#include "ports/capabilities.hpp"
#include "virtio/features.hpp"

namespace vnet::ports {

// Readiness of a queue for the worker's event loop: which fd to wait on and
// for what, when the worker decides to sleep instead of polling.
struct WaitSpec {
    int fd = -1;
    uint32_t events = 0;   // EPOLLIN / EPOLLOUT
    bool eventfd = false;  // a kick eventfd: the worker drains it on wake-up
    // Where the drained value is added (QueueCounters::kicks of the ring
    // the fd kicks); null: not counted.
    packet::Counter* kicks = nullptr;
};

class Port {
public:
    explicit Port(std::string name) : name_(std::move(name)) {}
    virtual ~Port() = default;
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    const std::string& name() const { return name_; }
    virtual uint16_t queue_count() const { return 1; }
    // What queue pair `queue` can do; the same answer for the port's life.
    virtual QueuePairCapabilities capabilities(uint16_t queue) = 0;
    // False while e.g. no guest is connected or its rings are not started:
    // the worker then neither polls nor feeds the queue.
    virtual bool queue_ready(uint16_t queue) const = 0;
    // Each direction on its own: a path from this queue needs it ready as a
    // source, a path into it as a destination. A guest starts each ring on
    // its own kick (vhost-user.rst), so one may run without the other.
    virtual bool source_ready(uint16_t queue) const { return queue_ready(queue); }
    virtual bool destination_ready(uint16_t queue) const { return queue_ready(queue); }
    // Changes whenever the queue restarts (e.g. a guest reconnected): packets
    // a path still holds from an older generation are stale and dropped.
    virtual uint32_t queue_generation(uint16_t) const { return 0; }

    // ---- events ----------------------------------------------------------------
    virtual WaitSpec receive_wait(uint16_t queue) const = 0;
    virtual WaitSpec transmit_wait(uint16_t queue) const = 0;
    // Called before the worker sleeps on receive_wait()/transmit_wait(): a
    // guest ring turns its kicks back on here (kick suppression is on while
    // the worker runs) and re-checks the ring. False means work arrived in
    // the meantime: do not sleep.
    virtual bool arm_receive_wait(uint16_t) { return true; }
    virtual bool arm_transmit_wait(uint16_t) { return true; }

    // A guarded datapath access to `address` faulted (SIGBUS: the front end
    // shrank its memory). A port whose memory holds that address stops the
    // queue and breaks its device; others ignore it.
    virtual void on_guest_fault(uint16_t /*queue*/, uintptr_t /*address*/) {}

    // Per-queue counters for the two directions, seen from the port.
    virtual packet::QueueCounters& rx_counters(uint16_t queue) = 0;  // packets out of the port
    virtual packet::QueueCounters& tx_counters(uint16_t queue) = 0;  // packets into the port

    // ---- following the peer (control thread) ------------------------------
    // True if a front end (a guest) negotiates this port's offloads and
    // enables its queue pairs; whatever serves the front end then tells the
    // peer through follow_peer_features / follow_peer_queue_pair as that
    // happens. False: the peer is told once, at wiring, that this port takes
    // any GSO frame.
    virtual bool has_front_end() const { return false; }
    // The peer takes `features` (what its guest negotiated, or every
    // GUEST_* offload for a peer without a front end): a tap sets its
    // offloads from them. Returns what was applied, for the log; empty if
    // the port has nothing to adapt. May throw (a refused ioctl).
    virtual std::string follow_peer_features(virtio::FeatureSet /*features*/) { return {}; }
    // The peer's queue pair `queue` is about to run (before its worker picks
    // it up) or has stopped (after the worker let go): a multiqueue tap
    // attaches or detaches its queue of that number, so the kernel steers
    // frames only to queue pairs someone reads. May throw.
    virtual void follow_peer_queue_pair(uint16_t /*queue*/, bool /*running*/) {}

    // ---- describing itself (control thread) -------------------------------
    // What the port tells about itself beyond counters, for stats and logs:
    // values grouped in named sections (a tap: "tap", "xdp").
    struct Fact {
        std::string section;
        std::string key;
        std::variant<std::string, bool, uint64_t> value;
    };
    virtual void describe(std::vector<Fact>& /*out*/) const {}

private:
    std::string name_;
};

}  // namespace vnet::ports
