// What a ring loop does when a pass found nothing to do: spin for
// --busy-poll-us (cheap wake-up while traffic flows), then ask the back end
// for a call (used_event / clearing NO_INTERRUPT) and sleep on the call
// eventfd, like a VM's NAPI loop re-enabling interrupts. Over either ring
// format (the DriverRing concept).
#pragma once

#include <chrono>
#include <cstdint>

#include "frontend/driver_ring.hpp"
#include "io/eventfd.hpp"
#include "run_control.hpp"

namespace vnet::pktgen {

template <frontend::DriverRing Ring>
class IdleWaiter {
public:
    // Longest single sleep: bounds how late a stop signal or deadline is noticed.
    static constexpr int kMaxSleepMs = 10;

    IdleWaiter(Ring& ring, int call_fd, uint32_t busy_poll_us)
        : ring_(ring), call_fd_(call_fd), busy_poll_(std::chrono::microseconds(busy_poll_us)) {
        ring_.disable_interrupts();
    }

    void worked() { idle_ = false; }

    // Returns true if it slept on the eventfd.
    bool idle(Clock::time_point now) {
        if (!idle_) {
            idle_ = true;
            idle_since_ = now;
        }
        if (now - idle_since_ < busy_poll_) {
            for (int i = 0; i < 16; ++i) {
                cpu_relax();
            }
            return false;
        }
        io::drain_eventfd(call_fd_);
        // enable_interrupts re-checks the used ring after its fence: if the
        // back end added entries meanwhile, sleeping would miss them.
        if (!ring_.enable_interrupts()) {
            io::wait_eventfd(call_fd_, kMaxSleepMs);
        }
        ring_.disable_interrupts();
        return true;
    }

private:
    Ring& ring_;
    int call_fd_;
    Clock::duration busy_poll_;
    bool idle_ = false;
    Clock::time_point idle_since_{};
};

}  // namespace vnet::pktgen
