// Worker: one thread, pinned to one core, that runs its engines
// (dataplane/engine.hpp: cross-connect paths and switches, one list) to
// completion. Each queue belongs to exactly one worker, so the datapath
// takes no locks.
//
// Three modes share one loop:
//  * poll: run every engine's turn forever (PMD style); guests' kicks stay
//    suppressed, so they never pay for a notification.
//  * event: when a full round of turns did no work, spin for busy_poll_us,
//    then arm notifications and sleep in epoll on exactly the fds the idle
//    engines wait for (kick eventfds, tap fds for EPOLLIN or EPOLLOUT).
//  * adaptive (the default): spin like poll mode while packets are likely
//    soon (AdaptiveSpin: a multiple of the learned gap between bursts, at
//    most adaptive_spin_us), then sleep as event mode does. While the
//    learned gap says traffic streams, the pause between empty polls grows
//    (SpinBackoff) so the guest writes its ring ahead of the worker instead
//    of beside it; sparse traffic keeps the short pause for latency. An engine
//    waiting for a full destination (PathWait::destination) sleeps at once:
//    its consumer (a guest's RX, a tap's reader) must run, perhaps on this
//    very CPU, and spinning would take that CPU from it; one holding a
//    burst for a bounded time (PathWait::holding) gives the CPU away once
//    per round instead.
//
// The control plane talks to a worker only through commands: closures run
// on the worker thread between rounds (add/remove an engine, stop a ring
// for GET_VRING_BASE). run_sync() waits for one to finish.
//
// Guest RX coalescing (rx_frames / rx_usecs): a destination may hold the
// publish+notify of frames it took. The worker owns their deadlines: it
// publishes what is due at the end of every round, sleeps no longer than
// the earliest deadline (a timerfd, see sleep_until_ready), and publishes
// everything still held when an engine goes away or the thread stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "dataplane/adaptive_spin.hpp"
#include "dataplane/engine.hpp"
#include "dataplane/spin_backoff.hpp"

namespace vnet::dataplane {

// The adaptive spin's ceiling. It must cover the gap between two bursts of a
// steady VM -> VM sender, which an event-mode worker would sleep through
// while the sender waits (a gap of ~90 us on average: docs/BENCHMARKS.md,
// "Where the defaults come from"), with room; and it bounds what one packet
// after silence costs: 200 us of spin (0.02 % of a CPU at 1 pps).
inline constexpr uint32_t kDefaultAdaptiveSpinUs = 200;

enum class WorkerMode : uint8_t { event, poll, adaptive };

constexpr std::string_view to_string(WorkerMode mode) {
    switch (mode) {
        case WorkerMode::event:
            return "event";
        case WorkerMode::poll:
            return "poll";
        case WorkerMode::adaptive:
            break;
    }
    return "adaptive";
}

struct WorkerOptions {
    WorkerMode mode = WorkerMode::adaptive;
    uint32_t busy_poll_us = 0;  // event mode: VHOST_SET_VRING_BUSYLOOP_TIMEOUT; 0 = sleep at once
    uint32_t adaptive_spin_us = kDefaultAdaptiveSpinUs;  // adaptive mode: the spin's ceiling
    std::optional<int> cpu;                              // pin the thread here
    std::string name = "worker";
};

class Worker {
public:
    explicit Worker(WorkerOptions options);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    void start();
    void stop();  // joins the thread; engines stay registered

    // Runs `command` on the worker thread between rounds (or at once when
    // the worker is not running). post() returns immediately; run_sync()
    // returns after the command ran.
    void post(std::function<void()> command);
    void run_sync(std::function<void()> command);

    // Only from the worker thread (inside a command) or while stopped. The
    // worker owns the engines it runs (and so every queue pair they serve).
    // add_engine has the engine configure its destinations (a path sets
    // the destination queue's rx_frames / rx_usecs: the last one added to
    // a queue decides); remove_engine publishes what they hold for it
    // first. A switch's members attach and detach through commands.
    template <class E>
    E& add_engine(std::unique_ptr<E> engine) {
        E& e = *engine;
        adopt(std::move(engine));
        return e;
    }
    void remove_engine(const Engine* engine);
    const std::vector<std::unique_ptr<Engine>>& engines() const { return engines_; }

    const WorkerOptions& options() const { return options_; }
    // Also picked up by the worker between rounds.
    void set_busy_poll_us(uint32_t us) { busy_poll_us_.store(us, std::memory_order_relaxed); }

    uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
    uint64_t sleeps() const { return sleeps_.load(std::memory_order_relaxed); }
    // Nanoseconds spent in rounds that moved packets, and in the rest (empty
    // rounds, spinning, sleeping), since the thread started (metrics).
    uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }
    uint64_t idle_ns() const { return idle_ns_.load(std::memory_order_relaxed); }

private:
    void run();
    void adopt(std::unique_ptr<Engine> engine);
    bool run_round();  // true if any engine moved a packet
    // Reads the round clock; the time since the last read was busy or idle.
    void advance_clock(bool busy);
    bool may_spin();  // after an idle round: true to run another instead of sleeping
    void run_commands();
    void sleep_until_ready();
    // Publishes held guest RX frames that are due (all of them if `all`);
    // returns the earliest deadline still pending, 0 if none.
    uint64_t publish_due_rx(bool all);
    void publish_held_rx(Engine& engine);
    void arm_rx_timer(uint64_t deadline_ns);
    void want(const ports::WaitSpec& spec);
    void update_registrations();
    void forget_registrations();

    WorkerOptions options_;
    std::atomic<uint32_t> busy_poll_us_;
    std::vector<std::unique_ptr<Engine>> engines_;
    bool destination_full_ = false;     // some turn of the last round ended at a full destination
    bool holding_ = false;              // some turn of the last round left a burst held
    AdaptiveSpin adaptive_;             // adaptive mode's spin-or-sleep
    SpinBackoff backoff_;               // the pause between two empty spin rounds
    uint64_t event_idle_since_ns_ = 0;  // event mode: first idle round of this spin; 0: none

    UniqueFd epoll_fd_;
    UniqueFd wake_fd_;             // eventfd: commands and stop
    UniqueFd timer_fd_;            // timerfd (CLOCK_MONOTONIC): the earliest held-RX deadline
    uint64_t timer_armed_ns_ = 0;  // the deadline it is armed for; 0: not armed
    // What is registered with epoll, and what this sleep wants. A handful
    // of fds per worker: vectors searched linearly, no allocation once warm.
    std::vector<ports::WaitSpec> registered_;
    std::vector<ports::WaitSpec> wanted_;

    std::mutex commands_mutex_;
    std::vector<std::function<void()>> commands_;
    std::atomic<bool> commands_pending_{false};
    std::atomic<bool> stop_requested_{false};
    std::atomic<bool> running_{false};
    std::thread thread_;

    std::atomic<uint64_t> rounds_{0};
    std::atomic<uint64_t> sleeps_{0};
    // Busy/idle time: worker thread only, but the totals are read by metrics.
    // The round clock: steady_now_ns() as the last round ended or the
    // worker woke (0: no round yet).
    uint64_t clock_ns_ = 0;
    std::atomic<uint64_t> busy_ns_{0};
    std::atomic<uint64_t> idle_ns_{0};
};

}  // namespace vnet::dataplane
