// Port: one end of a forwarding path, moving packets in bursts.
//
// Two ways a packet can travel, chosen by what the ends are:
//
//  * push: the source already holds packets in its memory (a guest's TX
//    ring). receive_burst() hands them out as iovecs, the destination's
//    transmit_burst() takes them (a tap writes them straight from guest
//    memory; a guest RX ring copies them once), and complete_burst() gives
//    the buffers back to the source (one used-ring publish per burst).
//
//  * fill: the source needs somewhere to put packets (a tap read). The
//    destination lends buffers with next_rx_buffer() (a guest's RX
//    buffers), the source reads into them with receive_one(), and
//    commit_rx_buffer() / flush_rx_buffers() hand them to the destination's
//    consumer. A tap read lands straight in guest memory.
//
// All calls for one (port, queue) come from the single worker that owns the
// queue: no locks. Nothing here allocates, locks or logs per packet.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>

#include "packet/packet_burst.hpp"
#include "ports/queue_counters.hpp"

namespace vnet::ports {

enum class PortKind : uint8_t { vhost_user, tap, null };
const char* to_string(PortKind k);

// Readiness of a queue for the worker's event loop: which fd to wait on and
// for what, when the worker decides to sleep instead of polling.
struct WaitSpec {
    int fd = -1;
    uint32_t events = 0;   // EPOLLIN / EPOLLOUT
    bool eventfd = false;  // a kick eventfd: the worker drains it on wake-up
};

class Port {
public:
    explicit Port(std::string name) : name_(std::move(name)) {}
    virtual ~Port() = default;
    Port(const Port&) = delete;
    Port& operator=(const Port&) = delete;

    const std::string& name() const { return name_; }
    virtual PortKind kind() const = 0;
    virtual uint16_t queue_count() const { return 1; }
    // False while e.g. no guest is connected or its rings are not started:
    // the worker then neither polls nor feeds the queue.
    virtual bool queue_ready(uint16_t queue) const = 0;
    // Changes whenever the queue restarts (e.g. a guest reconnected): packets
    // a path still holds from an older generation are stale and dropped.
    virtual uint32_t queue_generation(uint16_t) const { return 0; }

    // ---- source, push style -------------------------------------------------
    // Appends up to `max` packets to `burst`. Returns how many were added.
    virtual uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max);
    // The first `done` packets of `burst` are finished (sent or dropped).
    virtual void complete_burst(uint16_t queue, const packet::PacketBurst& burst, uint16_t done);

    // ---- destination, push style --------------------------------------------
    // Takes packets from the front of `burst`; returns how many. Fewer than
    // burst.count means "full for now": the caller keeps the rest and waits
    // for transmit_wait(). Packets refused for good are taken and counted as
    // drops, not returned.
    virtual uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) = 0;

    // ---- fill style, one packet at a time ---------------------------------------
    // Packets are filled one by one because a guest with MRG_RXBUF spreads a
    // packet over as many buffers as it needs: where the next packet starts
    // is known only once the previous one has been read.
    //
    // Destination: buffers for the next packet, able to hold `max_packet`
    // bytes (header included). False if the guest has not posted enough:
    // the path parks until transmit_wait() fires; nothing is dropped.
    virtual bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out);
    // Destination: the buffer from next_rx_buffer() now holds `len` bytes.
    virtual void commit_rx_buffer(uint16_t queue, uint32_t len);
    // Destination: end of a burst: publish what was committed (one used-index
    // write, at most one notify) and give back buffers taken but not used.
    // With rx coalescing on, the publish may be held (see below).
    virtual void flush_rx_buffers(uint16_t queue);

    // ---- destination, guest RX coalescing (rx_frames / rx_usecs) -------------
    // Hold the publish+notify at the end of a burst until `frames` frames are
    // pending or `usecs` have passed since the first held one (0: until the
    // end of the worker round). frames = 0: publish every burst. Ports that
    // publish nothing (taps) ignore it.
    virtual void set_rx_coalescing(uint16_t /*queue*/, uint32_t /*frames*/, uint32_t /*usecs*/) {}
    // When frames held on `queue` must be published (steady_clock ns; a
    // tiny value means "at the end of this round"); 0 if none are held.
    virtual uint64_t rx_held_deadline(uint16_t /*queue*/) const { return 0; }
    // Publishes held frames now (and notifies if the guest wants it).
    // Between turns only, never inside a burst.
    virtual void publish_held_rx(uint16_t /*queue*/) {}

    // Source: reads one packet into `buffer`. Returns its length, 0 when
    // there is nothing to read, or a negative errno.
    virtual int32_t receive_one(uint16_t queue, std::span<const iovec> buffer);

    // The largest packet (header included) the source may produce, so the
    // destination can size its buffers.
    virtual uint32_t max_packet_size() const { return 65536 + 64; }

    // Destination: the size of the virtio-net header each packet written to
    // it starts with, if it takes GSO frames (a tap); 0 if it does not, and
    // then no path merges segments for it (GRO).
    virtual uint32_t gso_header_size(uint16_t /*queue*/) const { return 0; }

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
    virtual QueueCounters& rx_counters(uint16_t queue) = 0;  // packets out of the port
    virtual QueueCounters& tx_counters(uint16_t queue) = 0;  // packets into the port

private:
    std::string name_;
};

}  // namespace vnet::ports
