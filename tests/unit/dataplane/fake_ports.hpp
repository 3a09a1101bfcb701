// Scriptable ports for testing forwarding paths without guests or taps.
#pragma once

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "ports/port.hpp"

namespace vnet::dataplane::testing {

// A burst source that hands out packets in its own memory (like a guest TX
// ring) and records which ones were completed.
class FakePushSource : public ports::Port, public ports::BurstSource {
public:
    FakePushSource() : Port("fake-push") {}
    ports::QueuePairCapabilities capabilities(uint16_t) override { return {.burst_source = this}; }
    bool queue_ready(uint16_t) const override { return ready; }

    void queue_packets(size_t n, size_t len) {
        for (size_t i = 0; i < n; ++i) {
            std::vector<uint8_t> p(len, static_cast<uint8_t>(next_id));
            packets.push_back({next_id++, std::move(p)});
        }
    }

    uint16_t receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t max) override {
        uint16_t n = 0;
        while (n < max && handed_out < packets.size() && !burst.full()) {
            auto& p = packets[handed_out++];
            burst.free_iovecs()[0] = iovec{p.bytes.data(), p.bytes.size()};
            burst.push(1, static_cast<uint32_t>(p.bytes.size()), p.id);
            ++n;
        }
        ++bursts;
        return n;
    }
    void complete_burst(uint16_t, const packet::PacketBurst& burst, uint16_t done) override {
        for (uint16_t i = 0; i < done; ++i) {
            completed.push_back(burst.packets[i].token);
        }
        ++complete_calls;
    }
    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    struct Packet {
        uint32_t id;
        std::vector<uint8_t> bytes;
    };
    std::deque<Packet> packets;
    size_t handed_out = 0;
    uint32_t next_id = 0;
    std::vector<uint32_t> completed;
    int bursts = 0;
    int complete_calls = 0;
    bool ready = true;
    packet::QueueCounters rx, tx;
};

// A burst sink that accepts at most `room` packets, then reports full.
class FakeSink : public ports::Port, public ports::BurstSink {
public:
    FakeSink() : Port("fake-sink") {}
    ports::QueuePairCapabilities capabilities(uint16_t) override { return {.burst_sink = this}; }
    bool queue_ready(uint16_t) const override { return true; }
    uint16_t transmit_burst(uint16_t, const packet::PacketBurst& burst) override {
        uint16_t n = 0;
        while (n < burst.count && room > 0) {
            auto iov = burst.packet_iovecs(n);
            const auto* b = static_cast<const uint8_t*>(iov[0].iov_base);
            received.emplace_back(b, b + iov[0].iov_len);
            --room;
            ++n;
        }
        burst_sizes.push_back(burst.count);
        return n;
    }
    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {42, 4, false}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    size_t room = SIZE_MAX;
    std::vector<std::vector<uint8_t>> received;
    std::vector<uint16_t> burst_sizes;
    packet::QueueCounters rx, tx;
};

// A reader (like a tap feeding a guest): reads queued frames into lent buffers.
class FakeFillSource : public ports::Port, public ports::Reader {
public:
    FakeFillSource() : Port("fake-fill") {}
    ports::QueuePairCapabilities capabilities(uint16_t) override { return {.reader = this}; }
    bool queue_ready(uint16_t) const override { return true; }
    int32_t receive_one(uint16_t, std::span<const iovec> buffer) override {
        ++reads;
        if (frames.empty()) {
            return 0;
        }
        std::vector<uint8_t> f = std::move(frames.front());
        frames.pop_front();
        size_t off = 0;
        for (const iovec& v : buffer) {
            size_t n = std::min(v.iov_len, f.size() - off);
            std::memcpy(v.iov_base, f.data() + off, n);
            off += n;
            if (off == f.size()) {
                break;
            }
        }
        return static_cast<int32_t>(off);
    }
    uint32_t max_packet_size() const override { return 2048; }
    ports::WaitSpec receive_wait(uint16_t) const override { return {7, 1, false}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    std::deque<std::vector<uint8_t>> frames;
    int reads = 0;  // receive_one calls, a system call each on a tap
    packet::QueueCounters rx, tx;
};

}  // namespace vnet::dataplane::testing
