// ControlQueue: how another thread (a worker that caught a guest breaking a
// ring rule) hands work to the control thread. An eventfd watched by the
// control reactor wakes it; the closures run there, in order.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "common/unique_fd.hpp"
#include "io/reactor.hpp"

namespace vnet::control {

class ControlQueue {
public:
    explicit ControlQueue(io::Reactor& reactor);
    ~ControlQueue();
    ControlQueue(const ControlQueue&) = delete;
    ControlQueue& operator=(const ControlQueue&) = delete;

    // Any thread.
    void post(std::function<void()> work);

private:
    void run_posted();

    io::Reactor& reactor_;
    UniqueFd wake_;
    std::mutex mutex_;
    std::vector<std::function<void()>> posted_;
};

}  // namespace vnet::control
