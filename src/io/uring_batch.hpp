// UringBatch: an io_uring sized once (no allocation per batch) that runs a
// batch of one-packet READV/WRITEV operations (READ/WRITE for a packet of
// one iovec) with one io_uring_enter and
// waits for all of them. It knows nothing about packets beyond iovecs;
// BatchWriter and BatchReader give the results their meaning.
//
// One thread uses a ring: with SINGLE_ISSUER the kernel binds it to the first
// thread that submits (the ring starts disabled and is enabled on first use,
// so it may be created on another thread).
#pragma once

#include <liburing.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "io/packet_batch.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::io {

class UringBatch {
public:
    static constexpr unsigned kFixedFileSlots = 8;

    // Throws std::system_error (with the errno of io_uring_setup) if no ring
    // can be created, e.g. io_uring disabled by sysctl or seccomp.
    explicit UringBatch(unsigned depth);
    ~UringBatch();
    UringBatch(const UringBatch&) = delete;
    UringBatch& operator=(const UringBatch&) = delete;

    unsigned depth() const noexcept { return depth_; }
    // The setup flags the kernel accepted (for logs and benchmarks).
    unsigned setup_flags() const noexcept { return setup_flags_; }

    // Fixed files save an fget/fput pair (an atomic refcount in a threaded
    // process) per operation. The ring holds a reference to the file until
    // unregister_fd: unregister before closing the fd, or a new file that
    // reuses the number would not be the one written to. Returns false when
    // the table is full or the kernel refuses; the fd then works unregistered.
    bool register_fd(int fd);
    void unregister_fd(int fd);

    enum class Op : uint8_t { readv, writev };

    // Once io_uring_enter fails for good (not EINTR/EAGAIN/EBUSY), the ring
    // is not used again; this is that -errno, or 0 while the ring is healthy.
    int broken_error() const noexcept { return broken_error_; }
    bool broken() const noexcept { return broken_error_ != 0; }

    // Runs min(count, depth()) operations, packet first + i of `burst` ->
    // results[i] (bytes or -errno), and returns how many it took (results are
    // kNotAttempted for those a broken ring did not run). For readv the
    // burst's packets are empty buffers lent to the read. With `linked`, the
    // SQEs form one IOSQE_IO_LINK chain: they run in order and the first
    // failure (error or short transfer) cancels the rest with -ECANCELED.
    // Needs first + count <= burst.count.
    size_t run(Op op, int fd, const packet::PacketBurst& burst, size_t first, size_t count,
               int* results, bool linked);

private:
    int fixed_slot(int fd) const noexcept;
    void enable_on_first_use();

    io_uring ring_{};
    unsigned depth_ = 0;
    unsigned setup_flags_ = 0;
    int broken_error_ = 0;
    bool enabled_ = false;
    bool fixed_files_ = false;
    std::array<int, kFixedFileSlots> fixed_fds_{};
};

}  // namespace vnet::io
