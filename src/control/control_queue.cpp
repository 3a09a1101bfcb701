#include "control/control_queue.hpp"

#include <sys/epoll.h>

#include <stdexcept>

#include "io/eventfd.hpp"

namespace vnet::control {

ControlQueue::ControlQueue(io::Reactor& reactor) : reactor_(reactor), wake_(io::make_eventfd()) {
    reactor_.watch(wake_.get(), EPOLLIN, [this](uint32_t) { run_posted(); });
}

ControlQueue::~ControlQueue() {
    reactor_.unwatch(wake_.get());
}

void ControlQueue::post(std::function<void()> work) {
    {
        std::lock_guard lock(mutex_);
        posted_.push_back(std::move(work));
    }
    io::signal_eventfd(wake_.get());
}

void ControlQueue::run_posted() {
    io::drain_eventfd(wake_.get());
    std::vector<std::function<void()>> batch;
    {
        std::lock_guard lock(mutex_);
        batch.swap(posted_);
    }
    for (auto& work : batch) {
        work();
    }
}

}  // namespace vnet::control
