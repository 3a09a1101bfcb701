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
//   - while bursts keep coming, they are held until kBudgetFrames are
//     pending or kBudgetNs have passed since the first held one (the
//     kernel's vhost-net signals once per batch of up to 64);
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
    static constexpr uint16_t kBudgetFrames = 64;
    static constexpr uint64_t kBudgetNs = 20000;

    // End of a burst, `pending` frames not yet published, at `now`:
    // 0 to publish now, else the time by which the held frames must be.
    uint64_t hold_until(uint64_t now, uint16_t pending) {
        if (last_publish_ns_ == 0 || guest_sent_ || now - last_publish_ns_ >= kSilenceNs ||
            pending >= kBudgetFrames) {
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
