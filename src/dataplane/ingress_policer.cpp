#include "dataplane/ingress_policer.hpp"

#include <algorithm>

namespace vnet::dataplane {

void IngressPolicer::configure(uint32_t rate_kbps, uint32_t burst_kbit) {
    burst_kbit_.store(burst_kbit, std::memory_order_relaxed);
    if (rate_kbps != 0) {
        const uint64_t kbit = burst_kbit == 0 ? kDefaultBurstKbit : burst_kbit;
        // At most 2^32 kbit at 1 kbit/s: 4.3e18 ns, within 64 bits.
        tolerance_ns_.store(cost_ns(kbit * 1000, rate_kbps), std::memory_order_relaxed);
    }
    arrival_ns_.store(0, std::memory_order_relaxed);  // in the past: the bucket is full
    rate_kbps_.store(rate_kbps, std::memory_order_relaxed);
}

uint64_t IngressPolicer::tokens_bits(uint64_t now_ns) const {
    const uint32_t rate = rate_kbps();
    if (rate == 0) {
        return 0;
    }
    const uint64_t arrival = std::max(arrival_ns_.load(std::memory_order_relaxed), now_ns);
    const uint64_t limit = now_ns + tolerance_ns_.load(std::memory_order_relaxed);
    return arrival >= limit ? 0 : (limit - arrival) * rate / 1'000'000;
}

uint16_t IngressPolicer::police(const packet::PacketBurst& burst, uint64_t now_ns) {
    const uint32_t rate = rate_kbps();
    if (rate == 0 || burst.count == 0) {
        return 0;
    }
    const uint64_t tolerance = tolerance_ns_.load(std::memory_order_relaxed);
    uint64_t seen = arrival_ns_.load(std::memory_order_relaxed);
    while (true) {
        // A bucket that emptied long ago is full: the arrival time never
        // lags now (GCRA's max(TAT, t)).
        const uint64_t arrival = std::max(seen, now_ns);
        // Past the limit only if a reconfiguration raced a charge: empty.
        const uint64_t limit = now_ns + tolerance;
        const uint64_t credit = arrival >= limit ? 0 : limit - arrival;
        uint64_t cost = 0;
        uint16_t passed = 0;
        for (uint16_t i = burst.count; i-- > 0;) {
            const uint32_t len = burst.packets[i].len;
            const uint64_t frame = len > burst.header_size ? len - burst.header_size : 0;
            const uint64_t c = cost_ns(frame * 8, rate);
            if (cost + c > credit) {
                break;
            }
            cost += c;
            ++passed;
        }
        // Relaxed: the arrival time is the only state shared, and nothing
        // else is published with it.
        if (passed == 0 ||
            arrival_ns_.compare_exchange_weak(seen, arrival + cost, std::memory_order_relaxed)) {
            return static_cast<uint16_t>(burst.count - passed);
        }
        // Another worker charged the bucket meanwhile: `seen` is its value.
    }
}

}  // namespace vnet::dataplane
