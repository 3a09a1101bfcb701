// NetRxQueue: a virtio-net receive queue (the guest's RX ring, us -> guest)
// as a fill-style destination. A source writes each packet straight into
// the guest buffers next_buffer lends (one buffer, or with MRG_RXBUF as
// many as the packet needs, num_buffers set at commit), and flush makes the
// burst visible with one publish, or holds it for rx_frames / rx_usecs
// (DESIGN.md: guest-side coalescing).
//
// Pure and single-owner like NetTxQueue: calls return "notify the guest"
// for the owner's eventfd write, and a guest that breaks a rule stops the
// queue with a RingFault (take_fault) for the owner to log.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <span>

#include "packet/packet_burst.hpp"
#include "packet/packet_identity.hpp"
#include "packet/queue_counters.hpp"
#include "virtio/net/net_queue_config.hpp"
#include "virtio/net/offload_adaptation.hpp"
#include "virtio/net/ring_fault.hpp"
#include "virtio/net/rx_stream_pacer.hpp"
#include "virtio/net/rx_window.hpp"
#include "virtio/ring/any_device_ring.hpp"

namespace vnet::virtio {

class NetRxQueue {
public:
    // Monotonic nanoseconds (the owner's clock: the worker compares
    // held_deadline() against the same one).
    using Clock = uint64_t (*)();
    // The deadline of frames held with rx_usecs = 0: due at the end of the
    // worker round that delivered them (any clock value is past it).
    static constexpr uint64_t kHeldUntilRoundEnd = 1;
    // Chains popped per window refill: one visit of the ring for up to this
    // many packets (non-mergeable) or buffers (mergeable). A switch's burst
    // (kMaxBurstPackets) in one visit, not two: each visit costs ~450
    // instructions besides its chains (the pop's set-up, the avail index,
    // the positions), ~7 a 64 B frame at 32. Chains popped ahead of need
    // stay in the window for the next burst (keep_unlent).
    static constexpr uint16_t kRefillChains = 64;
    // adaptive_rx: the longest a call is deferred. A stream keeps the guest
    // asleep at most this long beyond its first frame (a NIC's adaptive
    // interrupt moderation stays in the same tens of microseconds).
    static constexpr uint64_t kMaxCallDeferNs = 100000;
    // adaptive_rx: a deferred call is made once the guest has no more than
    // 1/kCallMarginDivisor of its ring posted. The later a guest is woken,
    // the more frames one wake-up serves; the margin covers the frames that
    // arrive while it wakes. On a 256-entry ring, a guest sharing a CPU
    // with its sender took ~320 frames a wake-up with a quarter and ~440
    // with an eighth: 64 B VM -> VM 1.83 -> 2.10 Mpps (BENCHMARKS.md,
    // 2026-12-05, tenth run).
    static constexpr uint16_t kCallMarginDivisor = 8;
    // A frame this big (a GSO frame, never an MTU-sized one) is made
    // visible as soon as it is written (publish_early): copying it takes
    // microseconds, in which a guest polling on another CPU can already
    // work on it instead of waiting for the burst's end. Bursts of
    // MTU-sized frames publish once: publishing them mid-burst measured
    // 5-10 % slower (the guest reads used entries on the lines we are
    // still writing).
    static constexpr uint32_t kEarlyPublishBytes = 16 * 1024;

    NetRxQueue(packet::QueueCounters& counters, Clock now_ns)
        : counters_(&counters), now_ns_(now_ns) {}

    // A (re)started ring: everything but the counters and the coalescing
    // settings (configuration) starts over.
    void start(AnyDeviceRing ring, const NetQueueConfig& config);
    // The log goes with the memory it marks: nothing may mark it after a stop.
    void stop() {
        running_ = false;
        config_.log = {};
    }
    bool running() const { return running_; }
    // The ring as the owner left it (vnetctl show reads it between rounds).
    const AnyDeviceRing& ring() const { return ring_; }
    void set_calls_wanted(bool wanted) { config_.calls_wanted = wanted; }

    // Lends the guest buffer(s) for one packet of up to `max_packet` bytes
    // (header included). False: the guest has not posted enough (flush and
    // park), the burst's window is full (flush, then go on), or the ring
    // broke (take_fault).
    // Inline: once per packet on the VM -> VM path, where the call was a
    // fifth of what lending costs.
    bool next_buffer(uint32_t max_packet, std::span<const iovec>* out) {
        // The common packet, in the middle of a burst: the next head the
        // window holds takes it on its own (with or without MRG_RXBUF, what
        // grow_window and lend would decide, without counting bytes).
        if (running_ && !kicks_enabled_ && window_.has_unlent() &&
            window_.head(window_.first_unlent()).bytes >= max_packet) [[likely]] {
            *out = window_.lend_one(max_packet);
            return true;
        }
        return next_buffer_from_ring(max_packet, out);
    }
    // The lent buffer now holds `len` bytes. A packet truncated by a
    // too-small buffer (no MRG_RXBUF) is counted as a drop and the buffer
    // is lent again.
    void commit_buffer(uint32_t len);
    // Batched lending (a reader that fills many buffers per system call):
    // appends to `out` the next heads that each hold `max_packet` bytes on
    // their own, up to `max`, as empty packets. Returns how many; 0 when
    // the next head is smaller (MRG_RXBUF buffers smaller than a packet:
    // lend one at a time with next_buffer), none is posted, or the ring
    // broke (next_buffer then says so). They stay lent until commit_buffers.
    uint16_t lend_buffers(uint32_t max_packet, uint16_t max, packet::PacketBurst& out);
    // The first lengths.size() buffers of the last lend_buffers hold
    // lengths[i] bytes each (as commit_buffer, one by one, in order).
    void commit_buffers(std::span<const int> lengths);
    // Another port's burst into this ring (VM -> VM, a switch's group): in
    // order, each packet made fit for this guest by `adaptation` (header
    // size, checksums, GSO) and copied once into lent buffers. Stops at the
    // first packet the ring has no buffers for; the segments of it already
    // in the guest are remembered, so the retry of the same packet resumes
    // after them. Returns how many packets were taken (delivered, or
    // dropped and counted); the owner then flushes, and takes the fault of
    // a ring that broke.
    uint16_t deliver_burst(const packet::PacketBurst& burst, OffloadAdaptation& adaptation);
    // End of a burst: what was filled is published now or held for
    // coalescing; buffers lent but not filled stay lent for the next burst
    // (given back to the ring by finish). Returns whether to notify.
    bool flush();

    // rx_frames / rx_usecs (frames = 0: off). With frames = 0 and
    // `stream`, the adaptive default instead (RxStreamPacer): a burst after
    // silence is published at once, a stream's bursts are held for a small
    // budget. Returns whether to notify (turning holding off publishes
    // what was held).
    bool set_coalescing(uint32_t frames, uint32_t usecs, bool stream = false);

    // adaptive_rx: every burst is published at once (a polling guest sees
    // it), but the call is deferred while the guest still has more than
    // 1/kCallMarginDivisor of its ring posted, for at most kMaxCallDeferNs: the owner
    // makes it when its sources run dry (take_deferred_call), so a guest
    // woken under a stream of bursts finds a nearly full ring instead of
    // one burst, and one that gets a lone frame is woken at once. Split
    // rings only (a packed ring has no count of posted buffers). Returns
    // whether to notify (turning it off makes a deferred call).
    bool set_adaptive_calls(bool on);
    // When a deferred call is due (Clock ns); 0: none deferred.
    uint64_t call_deadline() const { return running_ ? call_deadline_ : 0; }
    // Makes the deferred call now, if the guest (still) wants it.
    bool take_deferred_call();
    // When held frames must be published (Clock ns); 0: nothing held.
    uint64_t held_deadline() const { return running_ ? held_deadline_ : 0; }
    // Publishes held frames. Returns whether to notify.
    bool publish_held();
    // The owner is going to sleep: frames held only because a stream was
    // running (RxStreamPacer) go out now; rx_frames / rx_usecs holds keep
    // their deadline. Returns whether to notify.
    bool publish_stream_held();
    // The same queue pair's guest TX ring gave frames (RxStreamPacer: a
    // guest that answers gets its next frame at once).
    void note_guest_sent() { pacer_.guest_sent(); }
    // Before the owner sleeps on the kick fd: true if it may (the guest
    // posted no buffers since the path parked).
    bool arm_kicks();

    // At stop, while the memory is still mapped: gives back unused buffers
    // and publishes held frames (the guest gets them, and the call it would
    // have had). Returns whether to notify.
    bool finish();
    // The guest's memory is gone: held frames can no longer be told about;
    // they are dropped, and counted.
    void abandon();
    uint32_t vring_base() const;

    const RingFault* take_fault() {
        if (!fault_new_) {
            return nullptr;
        }
        fault_new_ = false;
        return &fault_;
    }

private:
    // A packet of another port's burst that the ring ran out of buffers in
    // the middle of (segmented): the segments before next_segment are in
    // the guest already, and the same packet offered again resumes after
    // them (packet/packet_identity.hpp tells it from a new one in its
    // buffer).
    struct PartialDelivery {
        packet::PacketIdentity packet;
        uint16_t next_segment = 0;
        bool is(const packet::PacketBurst& burst, uint16_t i) const {
            return next_segment != 0 && packet.is(burst, i);
        }
    };
    // rx_frames / rx_usecs (DESIGN.md); frames = 0: off.
    struct Coalescing {
        uint32_t frames = 0;
        uint32_t usecs = 0;
        bool adaptive_calls = false;
        bool stream = false;  // RxStreamPacer when frames = 0
    };
    // commit_buffer once a buffer is lent on a running ring (what
    // deliver_burst knows): inline in its loop. `header_says_one`: the
    // packet's header holds num_buffers = 1 already (RxWindow::commit).
    [[gnu::always_inline]] void commit_lent(uint32_t len, bool header_says_one);
    bool grow_window(uint32_t need_bytes);
    // next_buffer when the window does not hold the packet's head yet:
    // out of line, so next_buffer stays small enough to inline.
    [[gnu::noinline]] bool next_buffer_from_ring(uint32_t max_packet, std::span<const iovec>* out);
    // commit_buffer's publish of a big frame (publish_early), out of line
    // for the same reason.
    [[gnu::noinline]] void publish_early_now();
    bool make_room();
    template <typename R>
    uint16_t posted_left(R& ring) const;
    template <typename R>
    bool refill_window(R& ring);
    template <typename R>
    bool should_hold_publish(const R& ring, uint16_t avail_left);
    template <typename R>
    bool should_hold_for_stream(const R& ring);
    template <typename R>
    bool should_defer_call(const R& ring) const;
    template <typename R>
    bool publish(R& ring);
    template <typename R>
    void publish_early(R& ring);
    void fail(RingFault fault);

    AnyDeviceRing ring_;
    NetQueueConfig config_;
    packet::QueueCounters* counters_;  // outlives restarts: counts are per port
    Clock now_ns_;
    Coalescing coalescing_;  // outlives restarts: it is configuration
    bool running_ = false;
    bool kicks_enabled_ = true;  // the guest's view: do we want kicks
    bool fault_new_ = false;
    // next_buffer found too few posted buffers during this burst.
    bool starved_ = false;
    RingFault fault_;
    uint16_t pending_used_ = 0;      // heads filled since the last publish
    uint32_t batch_max_packet_ = 0;  // max_packet of the last lend_buffers
    uint16_t parked_avail_ = 0;      // posted_left() at the last flush
    // Frames (and their bytes) committed since the last publish. With
    // coalescing they span several flushes; counted when published.
    uint16_t burst_packets_ = 0;
    uint16_t held_packets_ = 0;  // burst_packets_ when the last flush held them
    uint64_t burst_bytes_ = 0;
    // When the held frames must be published; 0: nothing held,
    // kHeldUntilRoundEnd: rx_usecs = 0.
    uint64_t held_deadline_ = 0;
    bool held_by_stream_ = false;  // held by pacer_, not rx_frames / rx_usecs
    // The clock read of the flush that decided to publish (0: none), so the
    // pacer's publish time costs no second read.
    uint64_t flush_now_ns_ = 0;
    RxStreamPacer pacer_;
    // adaptive_rx: when the deferred call is due; 0: none deferred.
    uint64_t call_deadline_ = 0;
    RxWindow window_;
    PartialDelivery partial_;  // deliver_burst's packet cut short, if any
    // What one refill's pop_burst returns (members: no clearing per refill).
    std::array<PoppedChain, kRefillChains> popped_{};
    std::array<RingPosition, kRefillChains + 1> popped_before_{};
};

}  // namespace vnet::virtio
