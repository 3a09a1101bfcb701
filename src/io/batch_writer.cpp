#include "io/batch_writer.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "io/uring_batch.hpp"

namespace vnet::io {

size_t write_each(int fd, std::span<const PacketIov> packets, std::span<int> results,
                  size_t first) {
    const size_t n = packets.size();
    for (size_t i = first; i < n; ++i) {
        ssize_t written;
        do {
            written = ::writev(fd, packets[i].iov, static_cast<int>(packets[i].count));
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

size_t BatchWriter::submit(int fd, std::span<const PacketIov> packets, std::span<int> results) {
    packets = packets.first(std::min(packets.size(), results.size()));
    // One packet is one syscall either way, and writev skips the SQE/CQE
    // round trip: the ring only pays from two packets up.
    if (uring_ && packets.size() > 1) {
        return submit_uring(fd, packets, results);
    }
    return write_each(fd, packets, results);
}

// Each run is one linked chain, so a packet is only tried after the one
// before it succeeded. A hard error or short write also cuts the chain
// (the rest come back -ECANCELED); those packets have not been tried, so we
// resubmit from there, which gives the same results as write_each.
size_t BatchWriter::submit_uring(int fd, std::span<const PacketIov> packets,
                                 std::span<int> results) {
    const size_t n = packets.size();
    size_t next = 0;
    while (next < n) {
        const size_t ran = uring_->run(UringBatch::Op::writev, fd, packets.data() + next, n - next,
                                       results.data() + next, /*linked=*/true);
        const size_t end = next + ran;
        // The head of a chain always runs, unless the ring broke before it.
        size_t i = next;
        for (; i < end; ++i) {
            const int r = results[i];
            if (r == kNotAttempted && (i != next || uring_->broken())) {
                break;  // not tried: resubmit (or, ring broken, write) from here
            }
            if (is_would_block(r)) {
                std::fill(results.begin() + static_cast<ptrdiff_t>(i) + 1,
                          results.begin() + static_cast<ptrdiff_t>(n), kNotAttempted);
                return i;
            }
        }
        if (uring_->broken()) {
            abandon_ring();
            return write_each(fd, packets, results, i);
        }
        next = i;
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
