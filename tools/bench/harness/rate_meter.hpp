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

}  // namespace vnet::bench
