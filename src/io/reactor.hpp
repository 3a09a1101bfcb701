// Reactor: the event loop interface handed to the control plane. The
// vhost-user engine and its sockets never own a loop (libvhost-user's rule):
// they register fds and timers here, so the same code runs under a unit
// test's loop, vnetd's control thread, or anything else.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>

namespace vnet::io {

class Reactor {
public:
    using FdCallback = std::function<void(uint32_t epoll_events)>;
    using TimerCallback = std::function<void()>;
    using TimerId = uint64_t;

    virtual ~Reactor() = default;

    // Calls `callback` with the ready events (EPOLLIN, EPOLLOUT, EPOLLHUP...)
    // whenever `fd` is ready for `events`. One registration per fd.
    virtual void watch(int fd, uint32_t events, FdCallback callback) = 0;
    virtual void modify(int fd, uint32_t events) = 0;
    // Safe to call from inside any callback, including the fd's own.
    virtual void unwatch(int fd) = 0;

    // One-shot timer.
    virtual TimerId schedule(std::chrono::milliseconds delay, TimerCallback callback) = 0;
    virtual void cancel(TimerId id) = 0;
};

}  // namespace vnet::io
