// IngressPolicer: ingress policing of one port (OVS's
// ingress_policing_rate, kbit/s, and ingress_policing_burst, kbit) on the
// traffic the port sends into vnetd, applied per burst.
//
// A token bucket of `burst` kbit refilled at `rate` kbit/s, kept as GCRA
// (the ATM cell-rate algorithm, the same bucket in one number): a
// "theoretical arrival time" that each passed packet pushes forward by its
// cost at the rate; a packet conforms while that time stays within `burst`
// of now. One number means one atomic compare-and-swap per burst, so the
// port's queue pairs share one bucket, as in OVS, even when they run on
// different workers: no lock, and on one worker no contention.
//
// A packet costs its frame bits (the virtio-net header is not counted, as
// OVS and the kernel count frames). A burst whose packets do not all fit
// loses its oldest ones: the newest packets that fit pass, the ones before
// them are dropped (the caller counts them `policed`). Dropping from the
// front lets the source take them back at once, since sources complete in
// order (a guest's used ring); in bits it is the same bucket either way.
//
// Pure: the time comes in as an argument (steady-clock ns), so tests drive
// it with any clock sequence.
#pragma once

#include <atomic>
#include <cstdint>

#include "packet/packet_burst.hpp"

namespace vnet::dataplane {

class IngressPolicer {
public:
    // OVS's default when ingress_policing_burst is 0 (vswitch.xml).
    static constexpr uint32_t kDefaultBurstKbit = 8000;

    // rate 0 turns policing off. The bucket starts full. Safe against
    // police() on other threads (each value is atomic; a burst policed
    // meanwhile sees the old or the new setting).
    void configure(uint32_t rate_kbps, uint32_t burst_kbit);
    bool enabled() const { return rate_kbps_.load(std::memory_order_relaxed) != 0; }
    uint32_t rate_kbps() const { return rate_kbps_.load(std::memory_order_relaxed); }
    uint32_t burst_kbit() const { return burst_kbit_.load(std::memory_order_relaxed); }

    // How many packets at the front of `burst` to drop at `now_ns`; the
    // rest conform and are charged to the bucket.
    uint16_t police(const packet::PacketBurst& burst, uint64_t now_ns);

    // What the bucket holds at `now_ns`, in bits (rounded down).
    uint64_t tokens_bits(uint64_t now_ns) const;

private:
    // ns the rate needs for `bits` (rounded up): at rate kbit/s a bit
    // takes 1e6 / rate ns.
    static uint64_t cost_ns(uint64_t bits, uint32_t rate_kbps) {
        return (bits * 1'000'000 + rate_kbps - 1) / rate_kbps;
    }

    std::atomic<uint32_t> rate_kbps_{0};
    std::atomic<uint32_t> burst_kbit_{0};    // as configured (0: the default)
    std::atomic<uint64_t> tolerance_ns_{0};  // the bucket's size, in ns of the rate
    std::atomic<uint64_t> arrival_ns_{0};    // GCRA's theoretical arrival time
};

}  // namespace vnet::dataplane
