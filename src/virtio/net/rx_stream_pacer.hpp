// RxStreamPacer: when a guest RX burst is published and its call made, for
// a queue without explicit rx_frames / rx_usecs (adaptive_rx on a
// cross-connect). A fast reader drains the tap in many small bursts; a
// publish per burst wakes an event-driven guest per few frames, and a
// wake-up costs tens of microseconds on a VM host. So:
//   - a burst after silence (no publish in the last kSilenceNs, 200 us) is
//     published and called at once: a lone frame (a ping, a reply) waits
//     for nothing;
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
// Pure logic over a caller's clock (ns), no state beyond two times and a flag.
#pragma once

#include <cstdint>

namespace vnet::virtio {

class RxStreamPacer {
public:
    // A publish less than this long ago means a stream is running. Longer
    // than a guest's wake-up and turn: a guest sharing the sender's CPU
    // stops the sender while it runs, so a stream's bursts come tens of
    // microseconds apart; at 20 us each such burst counted as a lone one and
    // woke the guest at once (64 B tap -> guest 0.35-0.42 Mpps vs 0.50-0.52
    // at 200 us, BENCHMARKS.md guestrx). A request/response faster than
    // this pays at most kBudgetNs per frame.
    static constexpr uint64_t kSilenceNs = 200000;
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
        if (last_publish_ns_ == 0 || guest_sent_ || now - last_publish_ns_ >= kSilenceNs ||
            pending >= budget) {
            return 0;
        }
        if (first_held_ns_ == 0) {
            first_held_ns_ = now;
        }
        const uint64_t due = first_held_ns_ + kBudgetNs;
        return now >= due ? 0 : due;
    }
    // The frames went out (made visible, the call decided) at `now`.
    void published(uint64_t now) {
        last_publish_ns_ = now;
        first_held_ns_ = 0;
        guest_sent_ = false;
    }
    // The same queue pair's guest TX ring gave frames: the guest answers.
    void guest_sent() { guest_sent_ = true; }
    // A restarted ring: the next burst is a first one.
    void reset() {
        last_publish_ns_ = 0;
        first_held_ns_ = 0;
        guest_sent_ = false;
    }

private:
    uint64_t last_publish_ns_ = 0;
    uint64_t first_held_ns_ = 0;
    bool guest_sent_ = false;
};

}  // namespace vnet::virtio
