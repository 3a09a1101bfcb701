// SpinBackoff: how long the adaptive worker pauses the core between two
// empty polls of its spin, a pure schedule the worker asks once per empty
// round.
//
// While traffic streams (the learned gap between bursts under
// kStreamingGapNs), the pause doubles with every empty poll, from
// kMinPauses up to kMaxPauses, and falls back to kMinPauses as soon as a
// round finds work. A consumer that takes each burst the moment its index
// moves works on the very cache lines the producer is still writing (the
// split ring's avail entries and descriptors, four to sixteen to a line;
// the used entries it writes back, which the producer's cleanup reads), so
// every line crosses between the two CPUs while both use it; one that lets
// the producer run a few microseconds ahead touches lines the producer has
// finished with. Measured with DPDK testpmd's virtio-user txonly on the
// other CPU (docs/BENCHMARKS.md, ringwork): 1.1-1.4x the split rate; the
// same spin without the growth (16 pauses between every poll) gains
// nothing, so it is the lag, not fewer reads, that pays.
//
// Sparse traffic (a request/response exchange, gaps of tens of
// microseconds) keeps the short pause: there a poll that comes late is
// latency added to every packet (a ceiling of 256 for every gap cost
// tap <-> tap ping-pong ~1 us at p50). The same trade as the kernel's
// dynamic interrupt moderation (lib/dim): moderate while the rate is high,
// answer at once while it is low.
//
// The spin also gives its CPU away: at its first empty poll after work
// (unless traffic streams) and then every kYieldIntervalNs (sched_yield;
// on a CPU of its own that returns at once). A worker in adaptive or event
// mode sleeps often, so the scheduler counts it as owed CPU time and does
// not let a task that wakes beside it preempt its spin: on a one-CPU
// ping-pong, the sockperf end that vnetd's tap write had just woken on
// the same CPU waited out the spin, 108 us at p99 (docs/BENCHMARKS.md,
// latency). The first yield lets the task a burst woke run at once; the
// next ones bound how long the spin keeps any other task waiting.
#pragma once

#include <algorithm>
#include <cstdint>

namespace vnet::dataplane {

class SpinBackoff {
public:
    // Two PAUSEs (~80 ns on this project's AMD machine) between empty polls
    // keep the spin off the guests' lines without delaying a packet.
    static constexpr uint32_t kMinPauses = 2;
    // ~10 us on that machine (a PAUSE is ~40 ns there; on Intel since
    // Skylake about the same): under a burst interval of a streaming sender
    // at 5 Mpps (32 frames every ~6 us), so the lag stays within a burst or
    // two. 64 (~2.5 us) gained too little to tell from noise.
    static constexpr uint32_t kMaxPauses = 256;
    // Gaps between bursts below this are a stream (a sender's bursts
    // arriving back to back); above it, each packet's latency counts. 20 us
    // still took ping-pong exchanges (gaps ~20 us) for a stream.
    static constexpr uint64_t kStreamingGapNs = 10'000;

    static bool streaming(uint64_t gap_ewma_ns) { return gap_ewma_ns < kStreamingGapNs; }

    // Pauses to make before the next poll, after a poll that found nothing.
    uint32_t next_pauses(bool streaming) {
        if (!streaming) {
            pauses_ = kMinPauses;
            return kMinPauses;
        }
        const uint32_t now = pauses_;
        pauses_ = std::min(pauses_ * 2, kMaxPauses);
        return now;
    }
    // Yield this often while spinning: any other task on the worker's CPU
    // waits at most about this long, against one system call (a few
    // hundred ns in a VM) per 10 us of a spin that has nothing else to do.
    static constexpr uint64_t kYieldIntervalNs = 10'000;

    // After an empty poll at `now_ns`: whether to give the CPU away now.
    // The first empty poll after work yields at once unless traffic
    // streams: a sparse exchange's next packet comes from the task the
    // burst just woke, a stream's next burst is due within microseconds
    // and a yield per burst would cost the worker a system call each.
    bool yield_due(uint64_t now_ns, bool streaming) {
        if (!idle_since_work_) {
            idle_since_work_ = true;
            last_yield_ns_ = now_ns;
            return !streaming;
        }
        if (now_ns - last_yield_ns_ < kYieldIntervalNs) {
            return false;
        }
        last_yield_ns_ = now_ns;
        return true;
    }

    // A poll found work: the next idle stretch starts short again, and
    // yields at its first empty poll.
    void on_work() {
        pauses_ = kMinPauses;
        idle_since_work_ = false;
    }

private:
    uint32_t pauses_ = kMinPauses;
    bool idle_since_work_ = false;
    uint64_t last_yield_ns_ = 0;
};

}  // namespace vnet::dataplane
