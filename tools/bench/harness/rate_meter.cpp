#include "harness/rate_meter.hpp"

#include <chrono>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"

namespace vnet::bench {

namespace {

using Clock = std::chrono::steady_clock;

double now_s() {
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

}  // namespace

std::function<CounterSample()> sampled_when_read(std::function<uint64_t()> count) {
    return [count = std::move(count)] { return CounterSample{count(), now_s()}; };
}

double measure_rate(const std::function<uint64_t()>& count, const RateWindow& window,
                    const std::function<std::string()>& alive) {
    return measure_sampled_rate(sampled_when_read(count), window, alive);
}

double measure_sampled_rate(const std::function<CounterSample()>& sample, const RateWindow& window,
                            const std::function<std::string()>& alive) {
    auto check_alive = [&] {
        if (alive) {
            if (std::string why = alive(); !why.empty()) {
                throw MeasureError(why);
            }
        }
    };
    const uint64_t start = sample().count;
    const double give_up = now_s() + window.flow_timeout_s;
    for (uint64_t seen = 0; seen < window.flow_threshold; seen = sample().count - start) {
        check_alive();
        if (now_s() > give_up) {
            throw MeasureError("no traffic within " + std::to_string(int(window.flow_timeout_s)) +
                               " s (" + std::to_string(seen) + " frames)");
        }
        sleep_for(0.02);
    }
    sleep_for(window.warmup_s);
    check_alive();
    const CounterSample a = sample();
    sleep_for(window.window_s);
    CounterSample b = sample();
    // A coarse sampler (once a second) may not have published a later
    // sample yet: wait for it, a little longer than its period.
    const double wait_until = now_s() + 3;
    while (b.at_s - a.at_s < window.window_s && now_s() < wait_until) {
        sleep_for(0.02);
        b = sample();
    }
    check_alive();
    const double seconds = b.at_s - a.at_s;
    if (seconds <= 0) {
        throw MeasureError("the counter's clock did not advance over the window");
    }
    blog().debug("  window {:.3f} s: {} events", seconds, b.count - a.count);
    return static_cast<double>(b.count - a.count) / seconds;
}

}  // namespace vnet::bench
