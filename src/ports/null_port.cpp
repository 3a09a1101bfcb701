#include "ports/null_port.hpp"

#include <algorithm>

#include "virtio/net_header.hpp"

namespace vnet::ports {

NullPort::NullPort(std::string name) : Port(std::move(name)) {}

uint16_t NullPort::transmit_burst(uint16_t, const PacketBurst& burst) {
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < burst.count; ++i) {
        // Frame bytes: every packet inside vnetd carries the 12-byte header.
        bytes += burst.packets[i].len -
                 std::min<uint32_t>(burst.packets[i].len, sizeof(virtio::NetHeader));
    }
    tx_.count_burst(burst.count, bytes);
    return burst.count;
}

bool NullPort::next_rx_buffer(uint16_t, uint32_t max_packet, std::span<const iovec>* out) {
    if (scratch_.size() < max_packet) {
        scratch_.resize(max_packet);  // grows once, on the first packet
    }
    scratch_iov_ = iovec{scratch_.data(), max_packet};
    *out = std::span<const iovec>(&scratch_iov_, 1);
    return true;
}

void NullPort::commit_rx_buffer(uint16_t, uint32_t len) {
    ++pending_packets_;
    pending_bytes_ += len - std::min<uint32_t>(len, sizeof(virtio::NetHeader));
}

void NullPort::flush_rx_buffers(uint16_t) {
    tx_.count_burst(pending_packets_, pending_bytes_);
    pending_packets_ = 0;
    pending_bytes_ = 0;
}

}  // namespace vnet::ports
