#include "harness/rate_meter.hpp"

#include <chrono>

#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"

namespace vnet::bench {

double measure_rate(const std::function<uint64_t()>& count, const RateWindow& window,
                    const std::function<std::string()>& alive) {
    using Clock = std::chrono::steady_clock;
    auto check_alive = [&] {
        if (alive) {
            if (std::string why = alive(); !why.empty()) {
                throw MeasureError(why);
            }
        }
    };
    const uint64_t start = count();
    const auto give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(window.flow_timeout_s));
    while (count() - start < window.flow_threshold) {
        check_alive();
        if (Clock::now() > give_up) {
            throw MeasureError("no traffic within " + std::to_string(int(window.flow_timeout_s)) +
                               " s (" + std::to_string(count() - start) + " frames)");
        }
        sleep_for(0.02);
    }
    sleep_for(window.warmup_s);
    check_alive();
    const uint64_t a = count();
    const auto t0 = Clock::now();
    sleep_for(window.window_s);
    const uint64_t b = count();
    const auto t1 = Clock::now();
    check_alive();
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    blog().debug("  window {:.3f} s: {} events", seconds, b - a);
    return static_cast<double>(b - a) / seconds;
}

}  // namespace vnet::bench
