// AdaptiveSpin: the adaptive worker mode's one decision, after a round of
// turns that found no work: spin another round (guests' kicks stay
// suppressed) or arm notifications and sleep in epoll.
//
// It spins while a packet is likely soon: it learns the idle gaps that
// ended in work (from the first idle round to the round that found work
// again, sleeping included) as an EWMA, and spins for kSpinMultiple times
// that gap, never longer than the ceiling (adaptive_spin_us). A gap longer
// than the ceiling is one no spin could catch: it halves the average, so
// traffic whose gaps all exceed the ceiling (a few thousand packets a
// second) soon stops costing a wasted spin per packet (it cost a fifth of
// a CPU at 2000 pps), while one pause in dense traffic costs it little
// (the next short gaps teach it back; gaps met while sleeping count too,
// so a zero average still learns). Once the
// traffic stops, the worker sleeps within the ceiling of the last packet;
// a wake-up that finds nothing sleeps again at once (no spin without work).
//
// The same rule as NAPI busy-poll (spin a bounded time after work, then
// re-enable interrupts) and VPP's adaptive mode (poll while packets flow,
// interrupts when they stop), with the bound learned from the traffic.
//
// Pure: time comes in as arguments (steady-clock nanoseconds), so tests
// drive it with any clock sequence.
#pragma once

#include <cstdint>

namespace vnet::dataplane {

class AdaptiveSpin {
public:
    // Spin up to this multiple of the average gap: with gaps spread like
    // independent arrivals, a gap longer than 4x the mean is ~2 % of them.
    static constexpr uint64_t kSpinMultiple = 4;
    // EWMA weight of a new gap, 1/8 (as TCP's srtt): a few gaps to adapt,
    // one odd gap moves it little.
    static constexpr uint64_t kEwmaShift = 3;

    explicit AdaptiveSpin(uint64_t ceiling_ns) { set_ceiling_ns(ceiling_ns); }

    // Starts optimistic (the whole ceiling) until gaps are seen.
    void set_ceiling_ns(uint64_t ceiling_ns);

    // A round moved packets at `now_ns`.
    void on_work(uint64_t now_ns);
    // A round found nothing at `now_ns`: true to spin another round, false
    // to arm and sleep.
    bool keep_spinning(uint64_t now_ns);

    uint64_t ceiling_ns() const { return ceiling_ns_; }
    uint64_t gap_ewma_ns() const { return gap_ewma_ns_; }
    // How long after the first idle round the worker keeps spinning.
    uint64_t spin_budget_ns() const;
    bool idle() const { return idle_since_ns_ != 0; }

private:
    uint64_t ceiling_ns_ = 0;
    uint64_t gap_ewma_ns_ = 0;
    uint64_t idle_since_ns_ = 0;  // first idle round since the last work; 0: working
};

}  // namespace vnet::dataplane
