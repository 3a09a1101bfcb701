// NullPort: a destination that discards and counts. It measures pure ring
// work (guest TX -> null has no syscall per packet) and stands in for a
// peer in tests. Capabilities: burst sink and buffer lender (a scratch
// buffer); it is no source, so no path leaves it. Each queue has its own
// counters and scratch buffer: queues may belong to different workers.
#pragma once

#include <memory>
#include <vector>

#include "ports/port.hpp"

namespace vnet::ports {

// The lender comes first: its calls are per packet (fill), and a call
// through a base other than the first goes through a this-adjusting thunk.
class NullPort final : public BufferLender, public Port, public BurstSink {
public:
    explicit NullPort(std::string name, uint16_t queues = 1);

    uint16_t queue_count() const override { return static_cast<uint16_t>(queues_.size()); }
    QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_sink = this, .buffer_lender = this};
    }
    bool queue_ready(uint16_t) const override { return true; }

    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;

    // Every packet is read into the same scratch buffer: it is discarded at
    // commit, so nothing needs to keep it.
    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;
    // A batch is the same scratch buffer lent `max` times: a batched read
    // overwrites it frame after frame, which is all a discard port needs.
    uint16_t lend_rx_buffers(uint16_t queue, uint32_t max_packet, uint16_t max,
                             packet::PacketBurst& out) override;
    void commit_rx_buffers(uint16_t queue, std::span<const int> lengths) override;

    WaitSpec receive_wait(uint16_t) const override { return {}; }
    WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t queue) override { return queues_[queue]->rx; }
    packet::QueueCounters& tx_counters(uint16_t queue) override { return queues_[queue]->tx; }

private:
    struct Queue {
        packet::QueueCounters rx;
        packet::QueueCounters tx;
        std::vector<uint8_t> scratch;
        iovec scratch_iov{};
        uint16_t pending_packets = 0;
        uint64_t pending_bytes = 0;
    };
    std::vector<std::unique_ptr<Queue>> queues_;
};

}  // namespace vnet::ports
