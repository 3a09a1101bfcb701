// read_burst: the RX side of batched tap I/O. Reads up to N packets from one
// fd straight into caller buffers (guest RX buffers), one readv() per packet,
// until the fd runs dry.
//
// Each tun read consumes exactly one ptr_ring entry (tun_ring_recv, §3.2), so
// a burst is N reads whatever the mechanism. An io_uring variant (N unlinked
// READV SQEs with RWF_NOWAIT per io_uring_enter) saves the syscall entry
// per packet (tools/bench/micro/tap_io_bench read prices it against this
// loop; docs/BENCHMARKS.md has the figures). It is not offered
// yet because it cannot keep the burst contiguous: SQEs issued together
// complete packet, EAGAIN, packet when a frame arrives mid-batch, leaving a
// hole in the run of guest buffers, and IOSQE_IO_LINK cannot prevent that
// since every packet shorter than its buffer is a short read, which cuts the
// chain. The route to batched reads is a multishot read into a provided
// buffer ring (buffers are consumed only by packets; untested), §1 row 7.
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
