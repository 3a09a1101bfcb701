// PacketBurst: the unit of work between ports. A burst holds up to
// kMaxBurstPackets packets, each a run of iovecs that point into memory the
// packet's source owns (guest buffers, a tap port's staging area). Bursts
// are allocated once per forwarding path and reused: nothing on the
// datapath allocates per packet.
//
// The same type carries empty buffers lent by a destination (a guest's RX
// ring) to a source that fills them (a tap read): then `len` is the
// capacity on the way in and the bytes filled on the way back.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <span>

namespace vnet::packet {

// VHOST_NET_BATCH: the most packets taken from a ring and submitted at once.
inline constexpr uint16_t kMaxBurstPackets = 64;
// UIO_MAXIOV: writev's limit per call, and so per packet; also the burst's pool.
inline constexpr uint16_t kMaxBurstIovecs = 1024;

struct BurstPacket {
    uint16_t first_iov = 0;  // index into PacketBurst::iovecs
    uint16_t iov_count = 0;
    uint32_t len = 0;    // bytes, virtio-net header included
    uint32_t token = 0;  // the owning port's handle (e.g. a descriptor head)
};

struct PacketBurst {
    std::array<BurstPacket, kMaxBurstPackets> packets{};
    std::array<iovec, kMaxBurstIovecs> iovecs{};
    uint16_t count = 0;
    uint16_t iovecs_used = 0;
    // The virtio-net header every packet starts with, as its source
    // negotiated it (10 or 12 bytes): destinations count frame bytes with it.
    uint16_t header_size = 12;

    void clear() {
        count = 0;
        iovecs_used = 0;
    }
    bool full() const { return count == kMaxBurstPackets; }
    std::span<iovec> free_iovecs() {
        return {iovecs.data() + iovecs_used, size_t{kMaxBurstIovecs} - iovecs_used};
    }
    std::span<const iovec> packet_iovecs(uint16_t i) const {
        return {iovecs.data() + packets[i].first_iov, packets[i].iov_count};
    }
    // Appends a packet whose iovecs were just written at free_iovecs().
    void push(uint16_t iov_count, uint32_t len, uint32_t token) {
        packets[count++] = BurstPacket{iovecs_used, iov_count, len, token};
        iovecs_used = static_cast<uint16_t>(iovecs_used + iov_count);
    }
    // Drops the first `n` packets, keeping the rest in order (a short
    // transmit: the remainder is retried next turn).
    void pop_front(uint16_t n);
};

}  // namespace vnet::packet
