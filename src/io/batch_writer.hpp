// BatchWriter: writes a batch of packets to one fd (a tap queue) with as few
// syscalls as the mode allows, each packet straight from caller memory.
//
//   io_uring: one io_uring_enter for up to ring_depth WRITEV operations (a
//             plain WRITE for a packet of one iovec, which spares the kernel
//             the iovec import). It saves the syscall entry per packet, not
//             tun's per-packet work: each SQE is still one tun_get_user
//             (§3.1). So it pays where syscalls are dear (a VM under load)
//             and costs nothing where they are cheap (tools/bench/micro/
//             tap_io_bench write prices it; docs/BENCHMARKS.md).
//   writev:   one writev() per packet; always available.
//
// The fd must support IOCB_NOWAIT (tun, sockets, pipes do): each SQE carries
// RWF_NOWAIT so that a full fd answers -EAGAIN instead of parking the batch.
//
// If the ring cannot be created (old kernel, io_uring disabled by sysctl or a
// seccomp filter), the writer logs one warning and uses writev.
//
// One thread submits: the ring is SINGLE_ISSUER, owned by the first thread
// that calls submit() (it may be built elsewhere). A submit from another
// thread is refused by the kernel (EEXIST); the writer then finishes that
// batch and all later ones with writev, after one warning.
//
// Order is kept in both modes: packets are written front to back, and the
// result is always a prefix, which is what a guest TX ring needs (it
// completes descriptors in order). io_uring issues unlinked SQEs, which run
// inline in one io_uring_enter; the packets after one that would block are
// still tried, so when some of them were written, the blocked ones between
// are reported as failed for good rather than sent out of order (a tap at
// its default sndbuf never blocks; see submit_uring). An IOSQE_IO_LINK
// chain would avoid that but runs each packet as task work: slower than the
// syscalls it saves (tap_io_bench write --how io_uring against
// io_uring-unlinked prices the chain).
// The datapath neither allocates, locks nor logs per packet here.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/log.hpp"
#include "io/packet_batch.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::io {

class UringBatch;

class BatchWriter {
public:
    static constexpr unsigned kDefaultRingDepth = 256;

    // `owner` names the port in the (set-up only) log lines.
    explicit BatchWriter(BatchMode requested, unsigned ring_depth = kDefaultRingDepth,
                         std::string_view owner = "batch-writer");
    ~BatchWriter();
    BatchWriter(const BatchWriter&) = delete;
    BatchWriter& operator=(const BatchWriter&) = delete;

    // The mode in use: io_uring may have fallen back to writev.
    BatchMode mode() const noexcept;

    // io_uring only: make `fd` a fixed file of the ring (saves an fget/fput per
    // packet). The ring keeps the file open until unregister_fd: call it before
    // closing the fd. Call both before the first submit or on the submitting
    // thread (SINGLE_ISSUER). Returns false (and changes nothing) when not
    // possible; the fd then works unregistered.
    bool register_fd(int fd);
    void unregister_fd(int fd);

    // Writes each packet of `burst` with one write (tun takes exactly one
    // packet per call, §3.1), in order, and sets results[i] to the bytes
    // written or -errno. Writes min(burst.count, results.size()) packets.
    //
    // Returns the number of packets, from the front, that are finished:
    // written, or failed for good (e.g. -EINVAL for a malformed vnet header:
    // drop it and count it). If that is less than the packets written, then
    // results[k] (k = the return value) is -EAGAIN, -ENOBUFS or -ENOMEM
    // (is_would_block) and results after it are kNotAttempted: packets
    // [k, count) were not written; keep them (PacketBurst::pop_front(k)) and
    // wait for EPOLLOUT. A
    // would-block result inside the prefix (io_uring only: a later packet
    // of the batch was written) means that packet is dropped.
    size_t submit(int fd, const packet::PacketBurst& burst, std::span<int> results);

private:
    size_t submit_uring(int fd, const packet::PacketBurst& burst, size_t count,
                        std::span<int> results);
    void abandon_ring();

    std::unique_ptr<UringBatch> uring_;  // null in writev mode
    Logger log_;
};

// One writev() per packet with the contract of BatchWriter::submit for
// packets [first, count) of `burst`; the writev mode, and the fallback for
// the rest of a batch. Needs count <= min(burst.count, results.size()).
size_t write_each(int fd, const packet::PacketBurst& burst, size_t count, std::span<int> results,
                  size_t first = 0);

}  // namespace vnet::io
