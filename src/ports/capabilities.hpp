// What a queue pair can do with packets: four small roles a port plays per
// queue pair, found once when a path is built (Port::capabilities), so the
// dataplane chooses how packets travel from what the ends can do, never
// from what kind of port they are.
//
//  * BurstSource: holds packets in its own memory (a guest's TX ring, a
//    tap's staging slots) and hands them out in bursts, then takes them back
//    as completions.
//  * BurstSink: takes a burst (a tap writes it straight from the source's
//    memory; a guest RX ring copies it once; a discard port counts it).
//  * BufferLender: lends empty buffers of its own (a guest's RX buffers) for
//    a reader to fill, then publishes them once per burst.
//  * Reader: reads one packet at a time into buffers it is given (a tap
//    read lands straight in the lender's memory).
//
//  * RxPacing: a destination that decides when what it took becomes
//    visible and when its consumer is woken (a guest's RX ring: the used
//    index publish and the call); the engines that feed it tell it when.
//
// Push travel: BurstSource -> BurstSink. Fill travel: Reader ->
// BufferLender. All calls for one (port, queue pair) come from the worker
// that owns the queue pair: no locks. Nothing here allocates, locks or logs
// per packet.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>

#include "packet/packet_burst.hpp"

namespace vnet::ports {

class BurstSource {
public:
    // Appends up to `max` packets to `burst`. Returns how many were added.
    virtual uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) = 0;
    // The first `done` packets of `burst` are finished (sent or dropped).
    virtual void complete_burst(uint16_t queue, const packet::PacketBurst& burst,
                                uint16_t done) = 0;

protected:
    ~BurstSource() = default;
};

class BurstSink {
public:
    // Takes packets from the front of `burst`; returns how many. Fewer than
    // burst.count means "full for now": the caller keeps the rest and waits
    // for Port::transmit_wait(). Packets refused for good are taken and
    // counted as drops, not returned.
    virtual uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) = 0;
    // The size of the virtio-net header each packet written here starts
    // with, if the sink takes GSO frames (a tap); 0 if it does not, and then
    // no path merges segments for it (GRO).
    virtual uint32_t gso_header_size(uint16_t /*queue*/) const { return 0; }

protected:
    ~BurstSink() = default;
};

// Packets are filled one by one because a guest with MRG_RXBUF spreads a
// packet over as many buffers as it needs: where the next packet starts is
// known only once the previous one has been read.
class BufferLender {
public:
    // Buffers for the next packet, able to hold `max_packet` bytes (header
    // included). False if there are not enough (the guest has not posted
    // them): the path parks until Port::transmit_wait() fires; nothing is
    // dropped.
    virtual bool next_rx_buffer(uint16_t queue, uint32_t max_packet,
                                std::span<const iovec>* out) = 0;
    // The buffer from next_rx_buffer() now holds `len` bytes.
    virtual void commit_rx_buffer(uint16_t queue, uint32_t len) = 0;
    // End of a burst: publish what was committed (one used-index write, at
    // most one notify). Buffers lent but not filled stay lent. With rx
    // coalescing on, the publish may be held (Port::set_rx_coalescing).
    virtual void flush_rx_buffers(uint16_t queue) = 0;

    // Batched lending, for a reader that fills many buffers per system
    // call: appends to `out` (as empty packets, len = capacity) buffers for
    // up to `max` packets, each able to hold `max_packet` bytes on its own,
    // and returns how many. 0 when it cannot lend that way (a guest whose
    // buffers are smaller than a packet may be: MRG_RXBUF spreads it over
    // several), and then buffers go one at a time (next_rx_buffer).
    virtual uint16_t lend_rx_buffers(uint16_t /*queue*/, uint32_t /*max_packet*/, uint16_t /*max*/,
                                     packet::PacketBurst& /*out*/) {
        return 0;
    }
    // The first lengths.size() buffers of the last lend_rx_buffers now hold
    // lengths[i] bytes each; the others stay lent.
    virtual void commit_rx_buffers(uint16_t /*queue*/, std::span<const int> /*lengths*/) {}

protected:
    ~BufferLender() = default;
};

class Reader {
public:
    // Reads one packet into `buffer`. Returns its length, 0 when there is
    // nothing to read, or a negative errno (counted by the reader).
    virtual int32_t receive_one(uint16_t queue, std::span<const iovec> buffer) = 0;
    // Reads up to buffers.count packets, packet i into the empty buffer
    // buffers.packets[i], with as few system calls as it can. Returns n:
    // buffers [0, n) hold packets, in the order they were read, of
    // lengths[0, n) bytes; fewer than asked means there was nothing more
    // (or a read failed, counted by the reader). Needs lengths.size() >=
    // buffers.count.
    virtual uint16_t receive_many(uint16_t queue, const packet::PacketBurst& buffers,
                                  std::span<int> lengths) {
        uint16_t n = 0;
        while (n < buffers.count) {
            const int32_t len = receive_one(queue, buffers.packet_iovecs(n));
            if (len <= 0) {
                break;
            }
            lengths[n++] = len;
        }
        return n;
    }
    // The largest packet (header included) it may read, so the lender can
    // size its buffers.
    virtual uint32_t max_packet_size() const = 0;

protected:
    ~Reader() = default;
};

// Guest RX pacing of a destination queue pair. Only a queue pair that
// publishes to a consumer (a guest's RX ring) plays it; others (a tap, a
// discard port) deliver at once and play none.
class RxPacing {
public:
    // rx_frames / rx_usecs: hold the publish+notify at the end of a burst
    // until `frames` frames are pending or `usecs` have passed since the
    // first held one (0: until the end of the worker round). frames = 0:
    // publish every burst, or with `adaptive` hold a stream's bursts for a
    // small budget and publish a burst after silence at once
    // (virtio/net/rx_stream_pacer.hpp).
    virtual void set_rx_coalescing(uint16_t queue, uint32_t frames, uint32_t usecs,
                                   bool adaptive) = 0;
    // When frames held on `queue` must be published (steady_clock ns; a
    // tiny value means "at the end of this round"); 0 if none are held.
    virtual uint64_t rx_held_deadline(uint16_t queue) const = 0;
    // Publishes held frames now (and notifies if the guest wants it).
    // Between turns only, never inside a burst.
    virtual void publish_held_rx(uint16_t queue) = 0;
    // The owner is about to sleep: frames held only while a stream ran
    // (adaptive) go out now; rx_frames / rx_usecs holds keep their deadline.
    virtual void publish_rx_before_sleep(uint16_t queue) = 0;
    // adaptive_rx: publish every burst at once but defer the guest's call
    // while it still has plenty of buffers posted (NetRxQueue). The owner
    // makes deferred calls with flush_rx_call when its sources run dry, or
    // once rx_call_deadline (steady_clock ns; 0: none deferred) has passed.
    virtual void set_adaptive_rx(uint16_t queue, bool on) = 0;
    virtual uint64_t rx_call_deadline(uint16_t queue) const = 0;
    virtual void flush_rx_call(uint16_t queue) = 0;

protected:
    ~RxPacing() = default;
};

// The roles one queue pair plays; nullptr where it plays none. Pointers into
// the port, valid as long as the port.
struct QueuePairCapabilities {
    BurstSource* burst_source = nullptr;
    BurstSink* burst_sink = nullptr;
    BufferLender* buffer_lender = nullptr;
    Reader* reader = nullptr;
    RxPacing* rx_pacing = nullptr;
};

}  // namespace vnet::ports
