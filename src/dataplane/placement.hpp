// Placement: the one rule that maps queue pairs to workers.
//
// Queue pair q of the k-th cross-connect runs on worker (k + q) mod n. Both
// directions of a queue pair, and both ports' queues of it, live on that one
// worker, so the datapath shares nothing between threads. Offsetting by the
// cross-connect spreads single-queue VMs over the workers as well as the
// queue pairs of one multiqueue VM.
//
// A switch is one owner: every queue pair of every port on the s-th switch
// runs on worker (connections + s) mod n, so its MAC table is touched by
// that worker alone; switches after the cross-connects spread over the
// workers the same way. s counts the switches in the order they are made
// (the config's, then those added at run time) and is never reused, and
// `connections` is the boot config's, so a switch never changes worker.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vnet::dataplane {

class Placement {
public:
    explicit Placement(size_t workers) : workers_(workers == 0 ? 1 : workers) {}

    size_t workers() const { return workers_; }
    size_t worker_for(size_t connection, uint16_t queue_pair) const {
        return (connection + queue_pair) % workers_;
    }
    size_t worker_for_switch(size_t connections, size_t switch_index) const {
        return (connections + switch_index) % workers_;
    }

private:
    size_t workers_;
};

}  // namespace vnet::dataplane
