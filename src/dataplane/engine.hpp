// Engine: what a worker runs, one turn per round: a cross-connect's one
// direction (ForwardPath) or an L2 switch over its members' queue pairs
// (switching::SwitchDatapath). The worker keeps one list of engines and
// knows nothing of their kind: it runs their turns, decides from the turns'
// results whether to spin or sleep, asks each engine what to sleep on, and
// publishes the guest RX frames an engine's destinations hold
// (rx_frames / rx_usecs) when they are due.
//
// Every call comes from the owning worker's thread (or while it is
// stopped); the worker guards each one that may touch guest memory
// (run_guarded) and tells the engine of a fault with on_guest_fault.
#pragma once

#include <cstdint>
#include <functional>

#include "ports/port.hpp"

namespace vnet::dataplane {

// Why a turn ended: what the engine waits for before it can make progress.
enum class PathWait : uint8_t {
    none,         // budget used up: more work is likely there, poll again
    source,       // the source had nothing more
    destination,  // the destination is full (tap EAGAIN, guest posted no buffers):
                  // its consumer must run, so the worker sleeps at once
    not_ready,    // one end is not ready (guest not connected / ring stopped)
    holding,      // a burst is held for a full destination and retried every
                  // round for a bounded time (a switch): the worker gives its
                  // CPU away once per round and keeps spinning
};

struct TurnResult {
    uint32_t packets = 0;
    uint64_t bytes = 0;
    PathWait wait = PathWait::none;
};

class Engine {
public:
    using Want = std::function<void(const ports::WaitSpec&)>;

    virtual ~Engine() = default;

    // Moves packets until its weights are used up or nothing more can move.
    // `now_ns` is the worker's round clock (steady_now_ns() as the last
    // round ended or the worker woke, one read for the whole round).
    virtual TurnResult run_turn(uint64_t now_ns) = 0;
    // A guarded call touched lost guest memory at `address` (SIGBUS): drop
    // what the engine holds and let the ports that own the memory stop
    // their queues. Its next sleep waits for nothing (not_ready).
    virtual void on_guest_fault(uintptr_t address) = 0;
    // The worker found a round without work and means to sleep: arm what
    // the engine waits on (a guest ring turns its kicks back on and
    // re-checks) and pass each fd to wait on to `want`. False: work is
    // there or a burst is held, do not sleep.
    virtual bool prepare_sleep(const Want& want) = 0;

    // ---- guest RX its destinations hold (rx_frames / rx_usecs) ------------
    // As it joins a worker: set what its destinations hold for it.
    virtual void configure_destinations() {}
    // When what its destinations hold is due (steady-clock ns, a tiny value
    // meaning "at the end of this round"); 0 if nothing is held.
    virtual uint64_t held_rx_deadline() const { return 0; }
    // Publishes what its destinations hold (due, or the engine leaves).
    virtual void publish_held_rx() {}
    // The worker sleeps now: frames held only while a stream ran go out.
    virtual void publish_rx_before_sleep() {}

protected:
    Engine() = default;
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
};

}  // namespace vnet::dataplane
