#include "io/epoll_reactor.hpp"

#include <sys/epoll.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "io/eventfd.hpp"

namespace vnet::io {
namespace {

constexpr uint64_t kWakeupId = 0;
constexpr int kMaxEventsPerWait = 64;

[[noreturn]] void throw_errno(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

EpollReactor::EpollReactor() : epoll_(::epoll_create1(EPOLL_CLOEXEC)), wakeup_(make_eventfd()) {
    if (!epoll_) {
        throw_errno("epoll_create1");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeupId;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wakeup_.get(), &ev) != 0) {
        throw_errno("epoll_ctl(wakeup)");
    }
}

EpollReactor::~EpollReactor() = default;

void EpollReactor::watch(int fd, uint32_t events, FdCallback callback) {
    auto reg = std::make_shared<Registration>(
        Registration{next_registration_id_++, events, std::move(callback)});
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = reg->id;
    auto existing = by_fd_.find(fd);
    const int op = existing == by_fd_.end() ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (::epoll_ctl(epoll_.get(), op, fd, &ev) != 0) {
        throw_errno("epoll_ctl(watch)");
    }
    if (existing != by_fd_.end()) {
        fd_by_id_.erase(existing->second->id);
        existing->second = reg;
    } else {
        by_fd_.emplace(fd, reg);
    }
    fd_by_id_.emplace(reg->id, fd);
}

void EpollReactor::modify(int fd, uint32_t events) {
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) {
        return;
    }
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = it->second->id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) == 0) {
        it->second->events = events;
    }
}

void EpollReactor::unwatch(int fd) {
    auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) {
        return;
    }
    // The fd may already be closed (its epoll entry then went with it).
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
    fd_by_id_.erase(it->second->id);
    by_fd_.erase(it);
}

Reactor::TimerId EpollReactor::schedule(std::chrono::milliseconds delay, TimerCallback callback) {
    const TimerId id = next_timer_id_++;
    auto position = deadlines_.emplace(Clock::now() + delay, id);
    timers_.emplace(id, Timer{std::move(callback), position});
    return id;
}

void EpollReactor::cancel(TimerId id) {
    auto it = timers_.find(id);
    if (it == timers_.end()) {
        return;
    }
    deadlines_.erase(it->second.position);
    timers_.erase(it);
}

int EpollReactor::wait_timeout_ms(std::chrono::milliseconds timeout) const {
    auto wait = timeout;
    if (!deadlines_.empty()) {
        auto until_timer =
            std::chrono::ceil<std::chrono::milliseconds>(deadlines_.begin()->first - Clock::now());
        if (until_timer < wait) {
            wait = until_timer;
        }
    }
    if (wait.count() < 0) {
        return 0;
    }
    return wait.count() > INT32_MAX ? INT32_MAX : static_cast<int>(wait.count());
}

int EpollReactor::run_due_timers() {
    // Collect first: callbacks may schedule or cancel timers.
    std::vector<TimerId> due;
    const auto now = Clock::now();
    for (auto it = deadlines_.begin(); it != deadlines_.end() && it->first <= now; ++it) {
        due.push_back(it->second);
    }
    int ran = 0;
    for (TimerId id : due) {
        auto it = timers_.find(id);
        if (it == timers_.end()) {
            continue;  // cancelled by an earlier callback
        }
        TimerCallback callback = std::move(it->second.callback);
        deadlines_.erase(it->second.position);
        timers_.erase(it);
        callback();
        ++ran;
    }
    return ran;
}

int EpollReactor::run_once(std::chrono::milliseconds timeout) {
    epoll_event events[kMaxEventsPerWait];
    int n;
    do {
        n = ::epoll_wait(epoll_.get(), events, kMaxEventsPerWait, wait_timeout_ms(timeout));
    } while (n < 0 && errno == EINTR);
    int ran = 0;
    for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kWakeupId) {
            drain_eventfd(wakeup_.get());
            continue;
        }
        auto fd_it = fd_by_id_.find(id);
        if (fd_it == fd_by_id_.end()) {
            continue;  // unwatched by an earlier callback in this batch
        }
        // Hold the registration: the callback may unwatch its own fd.
        std::shared_ptr<Registration> reg = by_fd_.at(fd_it->second);
        reg->callback(events[i].events);
        ++ran;
    }
    return ran + run_due_timers();
}

void EpollReactor::run() {
    while (!stop_requested_.exchange(false)) {
        run_once(std::chrono::milliseconds(60'000));
    }
}

void EpollReactor::stop() {
    stop_requested_.store(true);
    signal_eventfd(wakeup_.get());
}

}  // namespace vnet::io
