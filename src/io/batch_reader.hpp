// read_burst: one readv() per packet from one fd straight into caller
// buffers, until the buffers are full or the fd runs dry.
//
// Each tun read consumes exactly one ptr_ring entry (tun_ring_recv, §3.2), so
// a burst is N reads whatever the mechanism. The daemon's taps do not use
// this loop: TapPort reads into a guest with one io_uring_enter per batch
// (receive_many, N unlinked READs with RWF_NOWAIT) and into its staging slots
// with one readv and then io_uring batches (read_staged). read_burst is the
// plain baseline those are priced against (tools/bench/micro/tap_io_bench)
// and the reader of the tap_probe test tool.
#pragma once

#include <cstddef>
#include <span>

#include "io/packet_batch.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::io {

struct ReadBurst {
    // Buffers filled, from the front: lengths[0..packets) are their sizes.
    size_t packets = 0;
    // Why the burst stopped: 0 when every buffer was filled; -EAGAIN when the
    // fd ran dry (wait for EPOLLIN); another -errno when a read failed (e.g.
    // -EBADFD: the tap queue was detached).
    int stop = 0;
};

// Reads packet i into buffers.packet_iovecs(i) (empty buffers lent to the
// read) with one readv(), for i from 0 until the buffers are full or a read
// fails. A packet longer than its buffer is
// truncated by tun (the read returns the buffer size): size buffers to at
// least vnet header + 65535 + VLAN when offloads are on (§3.2).
// Reads at most min(buffers.count, lengths.size()) packets.
ReadBurst read_burst(int fd, const packet::PacketBurst& buffers, std::span<int> lengths);

}  // namespace vnet::io
