#include "ports/null/null_port.hpp"

#include <algorithm>

#include "virtio/net_header.hpp"

namespace vnet::ports {

NullPort::NullPort(std::string name, uint16_t queues) : Port(std::move(name)) {
    for (uint16_t q = 0; q < std::max<uint16_t>(queues, 1); ++q) {
        queues_.push_back(std::make_unique<Queue>());
    }
}

uint16_t NullPort::transmit_burst(uint16_t queue, const packet::PacketBurst& burst) {
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < burst.count; ++i) {
        // Frame bytes: without the header its source negotiated (10 or 12).
        bytes += burst.packets[i].len - std::min<uint32_t>(burst.packets[i].len, burst.header_size);
    }
    queues_[queue]->tx.count_burst(burst.count, bytes);
    return burst.count;
}

bool NullPort::next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) {
    Queue& q = *queues_[queue];
    if (q.scratch.size() < max_packet) {
        q.scratch.resize(max_packet);  // grows once, on the first packet
    }
    q.scratch_iov = iovec{q.scratch.data(), max_packet};
    *out = std::span<const iovec>(&q.scratch_iov, 1);
    return true;
}

void NullPort::commit_rx_buffer(uint16_t queue, uint32_t len) {
    Queue& q = *queues_[queue];
    ++q.pending_packets;
    // Filled by a tap, whose reads carry its 12-byte header.
    q.pending_bytes += len - std::min<uint32_t>(len, sizeof(virtio::NetHeader));
}

uint16_t NullPort::lend_rx_buffers(uint16_t queue, uint32_t max_packet, uint16_t max,
                                   packet::PacketBurst& out) {
    std::span<const iovec> scratch;
    next_rx_buffer(queue, max_packet, &scratch);
    uint16_t n = 0;
    while (n < max && !out.full() && !out.free_iovecs().empty()) {
        out.free_iovecs()[0] = scratch[0];
        out.push(1, max_packet, n++);
    }
    return n;
}

void NullPort::commit_rx_buffers(uint16_t queue, std::span<const int> lengths) {
    for (const int len : lengths) {
        commit_rx_buffer(queue, static_cast<uint32_t>(len));
    }
}

void NullPort::flush_rx_buffers(uint16_t queue) {
    Queue& q = *queues_[queue];
    q.tx.count_burst(q.pending_packets, q.pending_bytes);
    q.pending_packets = 0;
    q.pending_bytes = 0;
}

}  // namespace vnet::ports
