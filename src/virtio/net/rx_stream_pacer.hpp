// RxStreamPacer: when a guest RX burst is published and its call made, for
// a queue without explicit rx_frames / rx_usecs (adaptive_rx on a
// cross-connect). A fast reader drains the tap in many small bursts; a
// publish per burst wakes an event-driven guest per few frames, and a
// wake-up costs tens of microseconds on a VM host. So:
//   - a burst after silence (no burst in the last kSilenceNs, 200 us, or
//     kStreamSilenceNs, 1 ms, once a stream has run) is published and
//     called at once: a lone frame (a ping, a reply) waits for nothing;
//   - so is a burst after the guest sent something since the last publish:
//     a guest that answers is in a conversation (a request and its reply,
//     TCP's ACK clock), where the next frame is what it waits for, however
//     close together the frames come (a 10 us round trip is well inside
//     the silence window, and holding there doubled its latency);
//   - while bursts keep coming to a guest that sleeps, they are held until
//     the frame budget (the owner's: three quarters of the guest's ring)
//     is pending or kBudgetNs have passed since the first held one; a
//     guest that is awake is not held for at all (NetRxQueue asks the ring
//     whether a publish would wake it);
//   - the owner publishes what is held before it sleeps (hold_ends_on_idle):
//     a stream's tail never waits for a timer.
// Pure logic over a caller's clock (ns), no state beyond two times, a count
// and a flag.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vnet::virtio {

class RxStreamPacer {
public:
    // No burst for this long means the queue was quiet: the next burst is a
    // lone one. Longer than a guest's wake-up and turn: a guest sharing the
    // sender's CPU stops the sender while it runs, so a stream's bursts come
    // tens of microseconds apart; at 20 us each such burst counted as a lone
    // one and woke the guest at once (64 B tap -> guest 0.35-0.42 Mpps vs
    // 0.50-0.52 at 200 us, BENCHMARKS.md guestrx). A request/response faster
    // than this pays at most kBudgetNs per frame unless the guest answers.
    // Measured between bursts, held ones included: measured from the last
    // publish, it ended every hold kSilenceNs after the publish before it,
    // whatever the budget.
    static constexpr uint64_t kSilenceNs = 200000;
    // Once kStreamFrames have gone out since the queue was last quiet, a
    // stream is running, and a pause of up to kStreamSilenceNs is still
    // inside it: a guest sharing its sender's CPU stops the sender while it
    // wakes and works through the hundreds of frames a wake-up brings, so
    // the stream's next burst comes 100-300 us later. Counted as a lone
    // burst, it woke the guest again at once for a handful of frames. A
    // request/response never gathers that many frames without an answer.
    static constexpr uint16_t kStreamFrames = 32;
    static constexpr uint64_t kStreamSilenceNs = 1000000;
    // The longest a stream's frame waits for a sleeping guest. Each wake-up
    // costs the CPU the guest shares with its sender tens of microseconds
    // (~60 on a PVM host), so a stream's wake-ups are what bounds it: this
    // caps them at 2,000 a second. A 64-frame or 20 us budget woke a guest
    // per ~20 frames and held tap -> guest to 0.47x the raw read loop; a
    // ring-sized one lets it take hundreds a wake-up (BENCHMARKS.md
    // guestrx). Latency-bound traffic is not held: a lone frame, a guest
    // that answers, and a guest that is awake go out at once.
    static constexpr uint64_t kBudgetNs = 500000;

    // End of a burst, `pending` buffers not yet published of the `budget`
    // a hold may gather, at `now`: 0 to publish now, else the time by which
    // the held frames must be.
    uint64_t hold_until(uint64_t now, uint16_t pending, uint16_t budget) {
        const bool quiet = last_burst_ns_ == 0 || now - last_burst_ns_ >= silence_ns();
        last_burst_ns_ = now;
        if (quiet) {
            stream_frames_ = 0;
            return 0;
        }
        if (guest_sent_ || pending >= budget) {
            return 0;
        }
        if (first_held_ns_ == 0) {
            first_held_ns_ = now;
        }
        const uint64_t due = first_held_ns_ + kBudgetNs;
        return now >= due ? 0 : due;
    }
    // `frames` went out (made visible, the call decided) at `now`.
    void published(uint64_t now, uint16_t frames) {
        last_burst_ns_ = now;
        stream_frames_ = static_cast<uint16_t>(
            std::min<uint32_t>(uint32_t{stream_frames_} + frames, kStreamFrames));
        first_held_ns_ = 0;
        guest_sent_ = false;
    }
    // The same queue pair's guest TX ring gave frames: the guest answers.
    void guest_sent() { guest_sent_ = true; }
    // A restarted ring: the next burst is a first one.
    void reset() {
        last_burst_ns_ = 0;
        stream_frames_ = 0;
        first_held_ns_ = 0;
        guest_sent_ = false;
    }

private:
    uint64_t silence_ns() const {
        return stream_frames_ >= kStreamFrames ? kStreamSilenceNs : kSilenceNs;
    }

    uint64_t last_burst_ns_ = 0;  // the last burst's end, held or published
    uint16_t stream_frames_ = 0;  // published since the queue was quiet (capped)
    uint64_t first_held_ns_ = 0;
    bool guest_sent_ = false;
};

}  // namespace vnet::virtio
