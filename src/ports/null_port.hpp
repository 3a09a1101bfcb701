// NullPort: a destination that discards and counts. It measures pure ring
// work (guest TX -> null has no syscall per packet) and stands in for a
// peer in tests. As a source it produces nothing.
#pragma once

#include <vector>

#include "ports/port.hpp"

namespace vnet::ports {

class NullPort final : public Port {
public:
    explicit NullPort(std::string name);

    PortKind kind() const override { return PortKind::null; }
    bool queue_ready(uint16_t) const override { return true; }

    uint16_t transmit_burst(uint16_t queue, const PacketBurst& burst) override;

    // Every packet is read into the same scratch buffer: it is discarded at
    // commit, so nothing needs to keep it.
    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;

    WaitSpec receive_wait(uint16_t) const override { return {}; }
    WaitSpec transmit_wait(uint16_t) const override { return {}; }
    QueueCounters& rx_counters(uint16_t) override { return rx_; }
    QueueCounters& tx_counters(uint16_t) override { return tx_; }

private:
    QueueCounters rx_;
    QueueCounters tx_;
    std::vector<uint8_t> scratch_;
    iovec scratch_iov_{};
    uint16_t pending_packets_ = 0;
    uint64_t pending_bytes_ = 0;
};

}  // namespace vnet::ports
