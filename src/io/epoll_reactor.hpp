// EpollReactor: the Reactor on one epoll fd, for the control thread.
//
// - watch/modify/unwatch may be called from inside any callback. A callback
//   unwatched (or replaced) while events for it are pending is not called
//   again, even if its fd number is reused at once: every registration has
//   its own id, carried in epoll_data.
// - Timers are one-shot and kept in a deadline-ordered map; epoll_wait's
//   timeout is the time to the earliest one. A timer scheduled from a timer
//   callback with delay 0 runs in the next run_once, never in the same one,
//   so a callback cannot starve the loop.
// - run_once/run/watch/schedule belong to one thread; stop() may be called
//   from any thread (it wakes the loop through an eventfd).
// - Construction failures (no epoll fd) throw std::system_error: start-up
//   only. watch() throws std::system_error if epoll_ctl refuses the fd.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <unordered_map>

#include "common/unique_fd.hpp"
#include "io/reactor.hpp"

namespace vnet::io {

class EpollReactor final : public Reactor {
public:
    EpollReactor();
    ~EpollReactor() override;
    EpollReactor(const EpollReactor&) = delete;
    EpollReactor& operator=(const EpollReactor&) = delete;

    // Watching an fd that is already watched replaces its events and callback.
    void watch(int fd, uint32_t events, FdCallback callback) override;
    void modify(int fd, uint32_t events) override;
    void unwatch(int fd) override;

    TimerId schedule(std::chrono::milliseconds delay, TimerCallback callback) override;
    void cancel(TimerId id) override;

    // Waits up to `timeout` (less if a timer is due sooner; 0 = poll) and runs
    // the ready fd callbacks and due timers. Returns how many callbacks ran.
    int run_once(std::chrono::milliseconds timeout);
    // Runs until stop(). stop() before run() makes run() return at once.
    void run();
    void stop();

    size_t watched_count() const { return by_fd_.size(); }
    size_t timer_count() const { return timers_.size(); }

private:
    using Clock = std::chrono::steady_clock;
    struct Registration {
        uint64_t id;
        uint32_t events;
        FdCallback callback;
    };
    struct Timer {
        TimerCallback callback;
        std::multimap<Clock::time_point, TimerId>::iterator position;
    };

    int wait_timeout_ms(std::chrono::milliseconds timeout) const;
    int run_due_timers();

    UniqueFd epoll_;
    UniqueFd wakeup_;  // stop() from another thread
    std::atomic<bool> stop_requested_{false};
    uint64_t next_registration_id_ = 1;  // 0 is the wakeup eventfd
    std::unordered_map<int, std::shared_ptr<Registration>> by_fd_;
    std::unordered_map<uint64_t, int> fd_by_id_;
    TimerId next_timer_id_ = 1;
    std::multimap<Clock::time_point, TimerId> deadlines_;
    std::unordered_map<TimerId, Timer> timers_;
};

}  // namespace vnet::io
