#include "reflector.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "frontend/packet_builder.hpp"
#include "idle_waiter.hpp"
#include "packet/wire.hpp"
#include "periodic_stats.hpp"

namespace vnet::pktgen {
namespace {

using packet::kEtherTypeIpv4;
using packet::kEthHeaderLen;
using packet::kIpProtoUdp;
using packet::kUdpHeaderLen;
constexpr size_t kIpv4MinHeaderLen = packet::kIpv4HeaderLen;
// The TX cookie carries the RX buffer's index with this bit set, so the
// two rings' completions can never be confused.
constexpr uint64_t kTxCookie = uint64_t{1} << 32;

void swap_bytes(std::byte* a, std::byte* b, size_t n) {
    std::byte tmp[6];
    std::memcpy(tmp, a, n);
    std::memcpy(a, b, n);
    std::memcpy(b, tmp, n);
}

}  // namespace

void swap_frame_addresses(std::byte* frame, uint32_t len) {
    swap_bytes(frame, frame + 6, 6);
    const auto ethertype =
        (static_cast<unsigned>(frame[12]) << 8) | static_cast<unsigned>(frame[13]);
    if (ethertype != kEtherTypeIpv4 || len < kEthHeaderLen + kIpv4MinHeaderLen) {
        return;
    }
    std::byte* ip = frame + kEthHeaderLen;
    const uint32_t ihl = (static_cast<uint32_t>(ip[0]) & 0x0f) * 4;
    if (ihl < kIpv4MinHeaderLen || len < kEthHeaderLen + ihl) {
        return;
    }
    swap_bytes(ip + 12, ip + 16, 4);
    // A fragment after the first has no UDP header.
    const auto frag_offset =
        ((static_cast<unsigned>(ip[6]) & 0x1f) << 8) | static_cast<unsigned>(ip[7]);
    if (static_cast<uint8_t>(ip[9]) != kIpProtoUdp || frag_offset != 0 ||
        len < kEthHeaderLen + ihl + kUdpHeaderLen) {
        return;
    }
    swap_bytes(ip + ihl, ip + ihl + 2, 2);
}

template <frontend::DriverRing Ring>
Reflector<Ring>::Reflector(frontend::NetDriver& device, const PktgenOptions& options)
    : device_(device),
      rx_(device.template rx_ring<Ring>()),
      tx_(device.template tx_ring<Ring>()),
      options_(options),
      completions_(std::max(rx_.size(), tx_.size())),
      peer_(device.session().socket_fd()) {
    // Every RX buffer can be on the TX ring at once: it must have room.
    if (tx_.size() < rx_.size()) {
        throw std::runtime_error("--reflect: the TX ring is smaller than the RX ring");
    }
    free_buffers_.reserve(rx_.size());
    for (uint32_t b = rx_.size(); b-- > 0;) {
        free_buffers_.push_back(static_cast<uint16_t>(b));
    }
    tx_.disable_interrupts();  // its completions are taken on every pass
}

template <frontend::DriverRing Ring>
void Reflector<Ring>::post_free_buffers() {
    if (free_buffers_.empty()) {
        return;
    }
    for (uint16_t b : free_buffers_) {
        const std::span<std::byte> buf = device_.rx_buffer(b);
        rx_.add_buffer(device_.gpa_of(buf.data()), static_cast<uint32_t>(buf.size()),
                       frontend::BufferAccess::device_writes, b);
    }
    free_buffers_.clear();
    rx_.publish();
    if (rx_.kick_needed()) {
        device_.kick(frontend::NetDriver::kRxQueue);
        ++counters_.rx_kicks;
    }
}

template <frontend::DriverRing Ring>
uint16_t Reflector<Ring>::take_sent() {
    frontend::UsedRingError error;
    const uint16_t n = tx_.reclaim(completions_, &error);
    for (uint16_t i = 0; i < n; ++i) {
        free_buffers_.push_back(static_cast<uint16_t>(completions_[i].cookie & ~kTxCookie));
    }
    if (error != frontend::UsedRingError::ok) {
        throw std::runtime_error(std::string("TX used ring: ") + frontend::to_string(error));
    }
    return n;
}

template <frontend::DriverRing Ring>
uint16_t Reflector<Ring>::reflect_received() {
    constexpr uint32_t kHeader = frontend::PacketBuilder::kNetHeaderLen;
    frontend::UsedRingError error;
    const uint16_t n = rx_.reclaim(completions_, &error);
    uint16_t sent = 0;
    for (uint16_t i = 0; i < n; ++i) {
        const auto id = static_cast<uint16_t>(completions_[i].cookie);
        const std::span<std::byte> buf = device_.rx_buffer(id);
        // virtio 1.2 §2.7.8: never read past our own buffer.
        const uint32_t len = std::min<uint32_t>(completions_[i].len, buf.size());
        if (len < kHeader + kEthHeaderLen) {
            ++counters_.too_short;
            free_buffers_.push_back(id);
            continue;
        }
        // A fresh header: no offload asked for (DATA_VALID and num_buffers
        // mean nothing on TX), the frame goes as it came.
        std::memset(buf.data(), 0, kHeader);
        swap_frame_addresses(buf.data() + kHeader, len - kHeader);
        tx_.add_buffer(device_.gpa_of(buf.data()), len, frontend::BufferAccess::device_reads,
                       id | kTxCookie);
        ++counters_.packets;
        counters_.bytes += len - kHeader;
        ++sent;
    }
    if (sent != 0) {
        tx_.publish();
        if (tx_.kick_needed()) {
            device_.kick(frontend::NetDriver::kTxQueue);
            ++counters_.tx_kicks;
        }
    }
    if (error != frontend::UsedRingError::ok) {
        throw std::runtime_error(std::string("RX used ring: ") + frontend::to_string(error));
    }
    return n;
}

template <frontend::DriverRing Ring>
ReflectCounters Reflector<Ring>::run() {
    const Clock::time_point start = Clock::now();
    const RunDeadline deadline(start, options_.duration_s);
    PeriodicStats stats("reflect", options_.stats_interval_s, start);
    // Sleeps on the RX ring only: sent buffers come back within a bounded
    // sleep (IdleWaiter::kMaxSleepMs) even when no frame arrives.
    IdleWaiter<Ring> waiter(rx_, device_.call_fd(frontend::NetDriver::kRxQueue),
                            options_.busy_poll_us);

    post_free_buffers();
    while (!stop_requested()) {
        const Clock::time_point now = Clock::now();
        if (deadline.passed(now) || (options_.count != 0 && counters_.packets >= options_.count)) {
            break;
        }
        if (peer_.closed(now)) {
            std::fprintf(stderr, "vnet-pktgen: the back end closed the connection\n");
            break;
        }
        const uint16_t reclaimed = take_sent();
        const uint16_t received = reflect_received();
        post_free_buffers();
        stats.tick(now, counters_.packets, counters_.bytes);
        if (received != 0 || reclaimed != 0) {
            waiter.worked();
        } else {
            counters_.wakeups += waiter.idle(now) ? 1 : 0;
        }
    }
    return counters_;
}

template class Reflector<frontend::DriverSplitRing>;
template class Reflector<frontend::DriverPackedRing>;

}  // namespace vnet::pktgen
