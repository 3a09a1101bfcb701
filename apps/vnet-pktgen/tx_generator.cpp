#include "tx_generator.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "idle_waiter.hpp"

namespace vnet::pktgen {
namespace {

frontend::FlowAddresses flow_from(const PktgenOptions& o) {
    frontend::FlowAddresses flow;
    flow.src_mac = o.src_mac;
    flow.dst_mac = o.dst_mac;
    return flow;
}

}  // namespace

template <frontend::DriverRing Ring>
TxGenerator<Ring>::TxGenerator(frontend::NetDriver& device, const PktgenOptions& options,
                               std::function<bool()> reconnect)
    : device_(device),
      ring_(device.template tx_ring<Ring>()),
      options_(options),
      builder_(flow_from(options),
               options.gso ? frontend::FrameKind::tcp_gso : frontend::FrameKind::udp, options.mss),
      slot_frame_len_(ring_.size(), 0),
      completions_(ring_.size()),
      rng_state_(options.seed | 1),
      peer_(device.session().socket_fd()),
      reconnect_(std::move(reconnect)) {
    free_slots_.reserve(ring_.size());
    for (uint32_t slot = ring_.size(); slot-- > 0;) {
        builder_.prepare_slot(device_.tx_slot(slot));
        free_slots_.push_back(static_cast<uint16_t>(slot));
    }
}

template <frontend::DriverRing Ring>
uint32_t TxGenerator<Ring>::next_frame_len() {
    if (options_.size_min == options_.size_max) {
        return options_.size_min;
    }
    // xorshift64*: fast, no allocation, and reproducible with --seed.
    rng_state_ ^= rng_state_ >> 12;
    rng_state_ ^= rng_state_ << 25;
    rng_state_ ^= rng_state_ >> 27;
    const uint64_t r = rng_state_ * 0x2545f4914f6cdd1dull;
    const uint64_t span = uint64_t{options_.size_max} - options_.size_min + 1;
    return options_.size_min + static_cast<uint32_t>((r >> 32) % span);
}

template <frontend::DriverRing Ring>
void TxGenerator<Ring>::wait_for_pacer(const RatePacer& pacer, Clock::time_point now) {
    // Sleep through long gaps (low rates would otherwise burn a core);
    // spin through short ones, where the scheduler's wake-up is too coarse.
    constexpr auto kSpinBelow = std::chrono::microseconds(200);
    const Clock::duration wait = pacer.until_next(now);
    if (wait > kSpinBelow) {
        std::this_thread::sleep_for(wait - kSpinBelow / 2);
    } else {
        cpu_relax();
    }
}

template <frontend::DriverRing Ring>
uint16_t TxGenerator<Ring>::reclaim_used() {
    frontend::UsedRingError error;
    const uint16_t n = ring_.reclaim(completions_, &error);
    for (uint16_t i = 0; i < n; ++i) {
        const auto slot = static_cast<uint16_t>(completions_[i].cookie);
        counters_.bytes += slot_frame_len_[slot];
        free_slots_.push_back(slot);
    }
    counters_.packets += n;
    if (error != frontend::UsedRingError::ok) {
        throw std::runtime_error(std::string("TX used ring: ") + frontend::to_string(error));
    }
    return n;
}

template <frontend::DriverRing Ring>
void TxGenerator<Ring>::stamp_source_mac(std::span<std::byte> slot) {
    // The source MAC's last two bytes, big-endian, plus the frame's index in
    // the cycle (a counter, not a division per frame).
    constexpr size_t kLowBytes = frontend::PacketBuilder::kNetHeaderLen + 6 + 4;
    const uint32_t base = (uint32_t{options_.src_mac[4]} << 8) | options_.src_mac[5];
    const auto low = static_cast<uint16_t>(base + src_mac_index_);
    if (++src_mac_index_ == options_.src_mac_count) {
        src_mac_index_ = 0;
    }
    slot[kLowBytes] = static_cast<std::byte>(low >> 8);
    slot[kLowBytes + 1] = static_cast<std::byte>(low & 0xff);
}

template <frontend::DriverRing Ring>
uint32_t TxGenerator<Ring>::post_burst(uint32_t budget) {
    const uint32_t n = std::min<uint32_t>(budget, static_cast<uint32_t>(free_slots_.size()));
    for (uint32_t i = 0; i < n; ++i) {
        const uint16_t slot = free_slots_.back();
        free_slots_.pop_back();
        const uint32_t frame_len = next_frame_len();
        const std::span<std::byte> buf = device_.tx_slot(slot);
        if (options_.src_mac_count > 1) {
            stamp_source_mac(buf);
        }
        const uint32_t len = builder_.stamp(buf, next_seq_++, frame_len);
        slot_frame_len_[slot] = frame_len;
        ring_.add_buffer(device_.gpa_of(buf.data()), len, frontend::BufferAccess::device_reads,
                         slot);
    }
    if (n != 0) {
        ring_.publish();
        if (ring_.kick_needed()) {
            device_.kick(frontend::NetDriver::kTxQueue);
            ++counters_.kicks;
        }
        counters_.posted += n;
    }
    return n;
}

template <frontend::DriverRing Ring>
TxCounters TxGenerator<Ring>::run() {
    const Clock::time_point start = Clock::now();
    const RunDeadline deadline(start, options_.duration_s);
    RatePacer pacer(options_.rate_pps, start);
    PeriodicStats stats("tx", options_.stats_interval_s, start);
    IdleWaiter<Ring> waiter(ring_, device_.call_fd(frontend::NetDriver::kTxQueue),
                            options_.busy_poll_us);

    while (!stop_requested()) {
        const Clock::time_point now = Clock::now();
        if (deadline.passed(now)) {
            break;
        }
        if (peer_.closed(now)) {
            std::fprintf(stderr, "vnet-pktgen: the back end closed the connection\n");
            if (!reconnect_ || !reconnect_()) {
                return counters_;  // nothing in flight will ever come back
            }
            // The rings go on where they are; what the dead back end held
            // comes back through the used ring of the new one, once.
            peer_ = PeerWatch(device_.session().socket_fd());
            ++counters_.reconnects;
            std::fprintf(stderr, "vnet-pktgen: reconnected, %u TX packets in flight\n",
                         ring_.chains_in_flight());
            continue;
        }
        const uint64_t left = options_.count != 0 ? options_.count - next_seq_ : UINT64_MAX;
        if (left == 0) {
            break;
        }
        const uint16_t reclaimed = reclaim_used();
        const uint32_t budget = static_cast<uint32_t>(std::min<uint64_t>(options_.burst, left));
        const uint32_t allowed = pacer.allowance(now, budget);
        const uint32_t posted = post_burst(allowed);
        pacer.consumed(posted);
        stats.tick(now, counters_.packets, counters_.bytes);
        if (posted != 0 || reclaimed != 0) {
            waiter.worked();
        } else if (free_slots_.empty()) {
            ++counters_.ring_full;
            counters_.wakeups += waiter.idle(now) ? 1 : 0;
        } else {
            wait_for_pacer(pacer, now);
        }
    }
    drain();
    return counters_;
}

template <frontend::DriverRing Ring>
void TxGenerator<Ring>::drain() {
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(options_.drain_timeout_s));
    IdleWaiter<Ring> waiter(ring_, device_.call_fd(frontend::NetDriver::kTxQueue), 0);
    while (ring_.chains_in_flight() != 0) {
        const Clock::time_point now = Clock::now();
        if (now >= deadline) {
            std::fprintf(stderr, "vnet-pktgen: %u TX packets still in flight after %.1fs\n",
                         ring_.chains_in_flight(), options_.drain_timeout_s);
            break;
        }
        if (reclaim_used() == 0) {
            waiter.idle(now);
        }
    }
}

template class TxGenerator<frontend::DriverSplitRing>;
template class TxGenerator<frontend::DriverPackedRing>;

}  // namespace vnet::pktgen
