// Rates over a measured window: wait until traffic flows (a counter moves),
// let it warm up, then count over the window with timestamps taken right at
// the two reads.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace vnet::bench {

// A point that could not be measured; its message becomes the cell's
// "n/a: <why>".
struct MeasureError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct RateWindow {
    double warmup_s = 1;
    double window_s = 1;
    double flow_timeout_s = 20;  // set-up (EAL, vhost-user handshake) must not count
    uint64_t flow_threshold = 1000;
};

// Events per second of `count` (a monotonic counter) over the window.
// `alive` is polled while waiting; returning a reason aborts with it.
double measure_rate(const std::function<uint64_t()>& count, const RateWindow& window,
                    const std::function<std::string()>& alive = {});

// One reading of a counter and the time it was taken, in seconds on the
// clock of whoever took it (only differences are used).
struct CounterSample {
    uint64_t count = 0;
    double at_s = 0;
};

// `count` read now, timed on measure_rate's clock (steady, seconds).
std::function<CounterSample()> sampled_when_read(std::function<uint64_t()> count);

// measure_rate for a counter that carries its own sampling time: a process
// that publishes its counters now and then (vnetd's stats file, once a
// second) is read as of when it took them, not when we looked. The window
// closes at the first sample at least window_s after the opening one.
double measure_sampled_rate(const std::function<CounterSample()>& sample, const RateWindow& window,
                            const std::function<std::string()>& alive = {});

}  // namespace vnet::bench
