#include "io/batch_writer.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "io/uring_batch.hpp"

namespace vnet::io {

size_t write_each(int fd, const packet::PacketBurst& burst, size_t count, std::span<int> results,
                  size_t first) {
    const size_t n = count;
    for (size_t i = first; i < n; ++i) {
        const packet::BurstPacket& p = burst.packets[i];
        ssize_t written;
        do {
            written = ::writev(fd, burst.iovecs.data() + p.first_iov, p.iov_count);
        } while (written < 0 && errno == EINTR);
        results[i] = written >= 0 ? static_cast<int>(written) : -errno;
        if (is_would_block(results[i])) {
            std::fill(results.begin() + static_cast<ptrdiff_t>(i) + 1,
                      results.begin() + static_cast<ptrdiff_t>(n), kNotAttempted);
            return i;
        }
    }
    return n;
}

BatchWriter::BatchWriter(BatchMode requested, unsigned ring_depth, std::string_view owner)
    : log_(make_logger(std::string(owner))) {
    if (requested != BatchMode::io_uring) {
        return;
    }
    try {
        uring_ = std::make_unique<UringBatch>(ring_depth);
    } catch (const std::system_error& e) {
        log_->warn("io_uring unavailable ({}); writing one writev() per packet", e.what());
    }
}

BatchWriter::~BatchWriter() = default;

BatchMode BatchWriter::mode() const noexcept {
    return uring_ ? BatchMode::io_uring : BatchMode::writev;
}

bool BatchWriter::register_fd(int fd) {
    return uring_ && uring_->register_fd(fd);
}

void BatchWriter::unregister_fd(int fd) {
    if (uring_) {
        uring_->unregister_fd(fd);
    }
}

size_t BatchWriter::submit(int fd, const packet::PacketBurst& burst, std::span<int> results) {
    const size_t count = std::min<size_t>(burst.count, results.size());
    // One packet is one syscall either way, and writev skips the SQE/CQE
    // round trip: the ring only pays from two packets up.
    if (uring_ && count > 1) {
        return submit_uring(fd, burst, count, results);
    }
    return write_each(fd, burst, count, results);
}

// Unlinked SQEs: io_uring issues each inline, in submission order, within
// one io_uring_enter. (A linked chain, which stops at the first packet that
// would block, runs every packet after the first as task work instead, which
// costs more than the syscalls it saves; see batch_writer.hpp.)
//
// A tap with its default sndbuf (INT_MAX) never answers EAGAIN, so in
// practice every packet is written. When one would block (ENOBUFS/ENOMEM
// under memory pressure; EAGAIN on a pipe or a tap whose sndbuf was
// lowered), the packets after it were still tried:
//  - none of them written: the result is a prefix, as write_each gives; the
//    caller keeps the rest and retries after EPOLLOUT;
//  - some written: the would-block packets before the last written one are
//    reported as failed for good (the caller counts them as drops), since
//    retrying them would put them behind packets that followed them.
size_t BatchWriter::submit_uring(int fd, const packet::PacketBurst& burst, size_t count,
                                 std::span<int> results) {
    const size_t n = count;
    size_t next = 0;
    while (next < n) {
        const size_t ran = uring_->run(UringBatch::Op::writev, fd, burst, next, n - next,
                                       results.data() + next, /*linked=*/false);
        const size_t end = next + ran;
        if (uring_->broken()) {
            // Nothing of this run was reaped past the first kNotAttempted.
            size_t i = next;
            while (i < end && results[i] != kNotAttempted) {
                ++i;
            }
            abandon_ring();
            return write_each(fd, burst, n, results, i);
        }
        size_t first_blocked = end;
        size_t finished = next;  // one past the last packet not refused for now
        for (size_t i = next; i < end; ++i) {
            if (is_would_block(results[i])) {
                first_blocked = std::min(first_blocked, i);
            } else {
                finished = i + 1;
            }
        }
        if (first_blocked < end) {
            const size_t keep_from = std::max(first_blocked, finished);
            if (keep_from < end) {
                std::fill(results.begin() + static_cast<ptrdiff_t>(keep_from) + 1,
                          results.begin() + static_cast<ptrdiff_t>(n), kNotAttempted);
                return keep_from;
            }
        }
        next = end;
    }
    return n;
}

void BatchWriter::abandon_ring() {
    const int error = uring_->broken_error();
    log_->warn(
        "io_uring_enter failed ({}{}); writing one writev() per packet from now on",
        std::system_category().message(-error),
        error == -EEXIST ? ": submit from a thread other than the ring's first submitter" : "");
    uring_.reset();
}

}  // namespace vnet::io
