#include "io/uring_batch.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace vnet::io {
namespace {

// Tried in order; EINVAL means "this kernel does not know a flag", so the
// next, older set is tried. SUBMIT_ALL (5.18) keeps submitting after an SQE
// that fails early, so every packet gets its own CQE. SINGLE_ISSUER +
// DEFER_TASKRUN (6.1) run the completion work of linked requests inside our
// own io_uring_enter wait instead of via task-work interrupts.
constexpr unsigned kSetupFlagSets[] = {
    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
        IORING_SETUP_R_DISABLED,
    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
    IORING_SETUP_SUBMIT_ALL,
    0,
};

bool is_transient_enter_error(int ret) {
    // EINTR: a signal during the wait; EAGAIN/EBUSY: the kernel could not
    // allocate requests or the CQ backlog must drain first (we drain it).
    return ret == -EINTR || ret == -EAGAIN || ret == -EBUSY;
}

// Reads the first bytes of every packet of the batch (the virtio header
// and the frame's headers, what tun reads first) before io_uring_enter. A
// guest packet was just written by another CPU, so its lines are cache
// misses; taken together here they overlap, while inside the kernel each
// is taken alone, one write after the other, behind the previous packet's
// tun work. Nothing else touches the headers before tun does (GRO decides
// from a few bytes read in place), so without this pass every miss is
// paid alone (docs/BENCHMARKS.md, "Where the defaults come from").
inline void warm_packets(const packet::PacketBurst& burst, size_t first, size_t n) {
    unsigned sink = 0;
    for (size_t i = first; i < first + n; ++i) {
        const packet::BurstPacket& p = burst.packets[i];
        const iovec& head = burst.iovecs[p.first_iov];
        if (p.iov_count == 0 || head.iov_len == 0) {
            continue;
        }
        const auto* base = static_cast<const unsigned char*>(head.iov_base);
        // A 64 B frame behind a 12 B header may straddle two lines.
        const size_t last = std::min<size_t>(head.iov_len, 128) - 1;
        sink += __atomic_load_n(base, __ATOMIC_RELAXED);
        sink += __atomic_load_n(base + last, __ATOMIC_RELAXED);
    }
    asm volatile("" : : "r"(sink));  // keep the loads
}

// One packet's SQE, offset 0 (tun and pipes are streams, the offset is
// ignored). A one-iovec packet (a guest's header and frame in one
// descriptor, a tap staging slot) goes as plain WRITE/READ of that buffer:
// the kernel then skips the iovec import of WRITEV/READV (copying the iovec
// array from user memory and checking it), the largest part of io_uring's
// per-request preparation for a 64 B packet. The write itself is the same
// write_iter call.
//
// RWF_NOWAIT: io_uring does not honour O_NONBLOCK on files that support
// IOCB_NOWAIT (tun, pipes, sockets: FMODE_NOWAIT); it would arm a poll and
// complete the write whenever there is room, so a full fd would stall the
// whole batch. RWF_NOWAIT makes it come back as -EAGAIN like writev() on an
// O_NONBLOCK fd, and IOCB_NOWAIT counts as non-blocking for
// tun_can_build_skb. No IOSQE_ASYNC: each operation runs inline in
// io_uring_enter, in submission order.
template <UringBatch::Op kOp>
inline void prep_packet(io_uring_sqe* sqe, int target, const iovec* iov, unsigned count) {
    if (count == 1 && iov[0].iov_len <= UINT32_MAX) {  // sqe->len is 32 bits
        const auto len = static_cast<unsigned>(iov[0].iov_len);
        if constexpr (kOp == UringBatch::Op::writev) {
            io_uring_prep_write(sqe, target, iov[0].iov_base, len, 0);
        } else {
            io_uring_prep_read(sqe, target, iov[0].iov_base, len, 0);
        }
    } else if constexpr (kOp == UringBatch::Op::writev) {
        io_uring_prep_writev(sqe, target, iov, count, 0);
    } else {
        io_uring_prep_readv(sqe, target, iov, count, 0);
    }
    sqe->rw_flags = RWF_NOWAIT;
}

}  // namespace

UringBatch::UringBatch(unsigned depth) : depth_(depth) {
    int ret = -EINVAL;
    for (unsigned flags : kSetupFlagSets) {
        io_uring_params params{};
        params.flags = flags;
        ret = io_uring_queue_init_params(depth, &ring_, &params);
        if (ret == 0) {
            setup_flags_ = flags;
            break;
        }
        if (ret != -EINVAL) {
            break;
        }
    }
    if (ret != 0) {
        throw std::system_error(-ret, std::generic_category(),
                                "io_uring_queue_init(" + std::to_string(depth) + ")");
    }
    fixed_fds_.fill(-1);
    // Sparse table (5.19): slots start empty and are filled per fd.
    fixed_files_ = io_uring_register_files_sparse(&ring_, kFixedFileSlots) == 0;
}

UringBatch::~UringBatch() {
    io_uring_queue_exit(&ring_);
}

bool UringBatch::register_fd(int fd) {
    if (!fixed_files_ || fd < 0) {
        return false;
    }
    if (fixed_slot(fd) >= 0) {
        return true;
    }
    auto free_slot = std::find(fixed_fds_.begin(), fixed_fds_.end(), -1);
    if (free_slot == fixed_fds_.end()) {
        return false;
    }
    const auto slot = static_cast<unsigned>(free_slot - fixed_fds_.begin());
    if (io_uring_register_files_update(&ring_, slot, &fd, 1) != 1) {
        return false;
    }
    *free_slot = fd;
    return true;
}

void UringBatch::unregister_fd(int fd) {
    const int slot = fixed_slot(fd);
    if (slot < 0) {
        return;
    }
    int empty = -1;
    io_uring_register_files_update(&ring_, static_cast<unsigned>(slot), &empty, 1);
    fixed_fds_[static_cast<size_t>(slot)] = -1;
}

int UringBatch::fixed_slot(int fd) const noexcept {
    for (size_t i = 0; i < fixed_fds_.size(); ++i) {
        if (fixed_fds_[i] == fd) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

void UringBatch::enable_on_first_use() {
    if (enabled_) {
        return;
    }
    if ((setup_flags_ & IORING_SETUP_R_DISABLED) != 0) {
        // io_uring_enable_rings() is declared by liburing 2.3 but not exported
        // from its shared library, so register the opcode directly.
        if (::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr,
                      0) < 0) {
            broken_error_ = -errno;
            return;
        }
    }
    enabled_ = true;
}

size_t UringBatch::run(Op op, int fd, const packet::PacketBurst& burst, size_t first, size_t count,
                       int* results, bool linked) {
    const size_t n = std::min<size_t>(count, depth_);
    std::fill_n(results, n, kNotAttempted);
    if (n == 0 || broken()) {
        return n;
    }
    enable_on_first_use();
    if (broken()) {
        return n;
    }

    const int slot = fixed_slot(fd);
    const int target = slot >= 0 ? slot : fd;
    const auto base_flags = static_cast<uint8_t>(slot >= 0 ? IOSQE_FIXED_FILE : 0);
    // With `linked`, every SQE but the last carries IOSQE_IO_LINK.
    const size_t link_until = linked ? n - 1 : 0;
    if (op == Op::writev) {
        warm_packets(burst, first, n);
    }
    // One loop per operation, so the choice is not made per packet.
    auto fill = [&]<Op kOp>() {
        for (size_t i = 0; i < n; ++i) {
            // Never null: the SQ is empty between runs and n <= depth.
            io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
            const packet::BurstPacket& p = burst.packets[first + i];
            prep_packet<kOp>(sqe, target, burst.iovecs.data() + p.first_iov, p.iov_count);
            sqe->flags = static_cast<uint8_t>(base_flags | (i < link_until ? IOSQE_IO_LINK : 0));
            sqe->user_data = i;
        }
    };
    if (op == Op::writev) {
        fill.template operator()<Op::writev>();
    } else {
        fill.template operator()<Op::readv>();
    }

    size_t reaped = 0;
    while (reaped < n) {
        // Submits what is still in the SQ (all of it on the first pass) and
        // waits until every operation of this run has completed.
        const int ret = io_uring_submit_and_wait(&ring_, static_cast<unsigned>(n - reaped));
        if (ret < 0 && !is_transient_enter_error(ret)) {
            // E.g. EEXIST: used from a second thread. The ring cannot be
            // trusted with further batches; the unreaped results stay
            // kNotAttempted and the owner falls back to plain syscalls.
            broken_error_ = ret;
            return n;
        }
        // The CQ tail read once (io_uring_cq_ready) rather than per CQE as
        // io_uring_for_each_cqe does. 16-byte CQEs: no CQE32 in the setup.
        const unsigned ready = io_uring_cq_ready(&ring_);
        const unsigned head = *ring_.cq.khead;
        for (unsigned k = 0; k < ready; ++k) {
            const io_uring_cqe& cqe = ring_.cq.cqes[(head + k) & ring_.cq.ring_mask];
            // user_data is the index this run gave the SQE: always < n.
            results[cqe.user_data] = cqe.res;
        }
        io_uring_cq_advance(&ring_, ready);
        reaped += ready;
    }
    return n;
}

}  // namespace vnet::io
