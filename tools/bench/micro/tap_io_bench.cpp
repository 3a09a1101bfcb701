// tap_io_bench: vnetd's batched tap I/O (src/io: BatchWriter, UringBatch,
// read_burst) alone against a real tap, to price one syscall scheme against
// another without a guest or a ring in the way.
//
//   tap_io_bench write --name T --how io_uring|writev|io_uring-unlinked
//                      [--seconds S] [--batch N] [--size BYTES]
//       writes batches of one prebuilt frame for S seconds
//   tap_io_bench read --name T --how readv|io_uring|multishot [--batch N]
//                     [--txqueuelen Q]
//       prints "ready", waits for a line on stdin (fill the tap's queue in
//       between, e.g. tests/integration/tools/tap_frames.py send), then
//       drains the queue, timing it. multishot is the mechanism vnetd does
//       not use (yet): one IORING_OP_READ_MULTISHOT (kernel >= 6.7) that
//       reads frame after frame into a provided-buffer ring, so a frame
//       costs the kernel's read and a completion, no submission
//
// Each prints one "ok ... mpps=X" line. io_uring-unlinked is the raw ring
// without IOSQE_IO_LINK: it prices the chain that keeps packet order.
#include <liburing.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "io/batch_reader.hpp"
#include "io/batch_writer.hpp"
#include "io/uring_batch.hpp"
#include "packet/packet_burst.hpp"
#include "ports/setup_error.hpp"
#include "ports/tap/tap_device.hpp"
#include "virtio/net_header.hpp"

namespace {

using namespace vnet;
using Clock = std::chrono::steady_clock;

constexpr size_t kEthHeader = 14;

// `count` packets (at most one burst) that all point at one vnet header
// (all zero: no offload) and one broadcast frame of ethertype 0x88b5 (IEEE
// local experimental, so the stack ignores it).
struct RepeatedFrame {
    virtio::NetHeader header{};
    std::vector<uint8_t> frame;
    packet::PacketBurst burst;

    RepeatedFrame(size_t count, size_t frame_size) : frame(std::max(frame_size, kEthHeader), 0) {
        std::fill(frame.begin(), frame.begin() + 6, 0xff);
        const uint8_t src[6] = {0x02, 0x76, 0x6e, 0x00, 0x00, 0x01};
        std::copy(src, src + 6, frame.begin() + 6);
        frame[12] = 0x88;
        frame[13] = 0xb5;
        for (size_t i = 0; i < count; ++i) {
            std::span<iovec> iov = burst.free_iovecs();
            iov[0] = {&header, sizeof header};
            iov[1] = {frame.data(), frame.size()};
            burst.push(2, static_cast<uint32_t>(sizeof header + frame.size()),
                       static_cast<uint32_t>(i));
        }
    }
};

int bench_write(ports::TapDevice& tap, const std::string& how, double seconds, size_t batch_size,
                size_t frame_size) {
    std::unique_ptr<io::BatchWriter> writer;
    std::unique_ptr<io::UringBatch> ring;
    if (how == "io_uring-unlinked") {
        ring = std::make_unique<io::UringBatch>(static_cast<unsigned>(batch_size));
        ring->register_fd(tap.fd());
    } else {
        const auto mode = io::parse_batch_mode(how);
        if (!mode) {
            std::fprintf(stderr, "tap_io_bench: unknown --how '%s'\n", how.c_str());
            return 2;
        }
        writer = std::make_unique<io::BatchWriter>(*mode, io::BatchWriter::kDefaultRingDepth,
                                                   "tap_io_bench");
        writer->register_fd(tap.fd());
    }
    RepeatedFrame batch(batch_size, frame_size);
    std::vector<int> results(batch_size);
    uint64_t written = 0;
    uint64_t failed = 0;
    const auto start = Clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    auto now = start;
    while (now < end) {
        // The clock is read once per 64 batches: it costs more than a write.
        for (int rep = 0; rep < 64; ++rep) {
            const size_t finished =
                ring ? ring->run(io::UringBatch::Op::writev, tap.fd(), batch.burst, 0, batch_size,
                                 results.data(), /*linked=*/false)
                     : writer->submit(tap.fd(), batch.burst, results);
            for (size_t i = 0; i < finished; ++i) {
                results[i] >= 0 ? ++written : ++failed;
            }
        }
        now = Clock::now();
    }
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const std::string used =
        ring ? "io_uring-unlinked" : std::string(io::to_string(writer->mode()));
    std::printf("ok mode=%s batch=%zu size=%zu written=%llu failed=%llu mpps=%.3f\n", used.c_str(),
                batch_size, frame_size, static_cast<unsigned long long>(written),
                static_cast<unsigned long long>(failed), double(written) / elapsed / 1e6);
    return 0;
}

// The read benches' handshake: "ready", then a line on stdin once the
// caller has filled the tap's queue.
void wait_for_go() {
    std::printf("ready\n");
    std::string line;
    std::getline(std::cin, line);
}

void print_read_result(const std::string& how, size_t batch, uint64_t packets, uint64_t calls,
                       double elapsed) {
    std::printf("ok how=%s batch=%zu packets=%llu batches=%llu ns_per_packet=%.1f mpps=%.3f\n",
                how.c_str(), batch, static_cast<unsigned long long>(packets),
                static_cast<unsigned long long>(calls),
                packets ? elapsed * 1e9 / double(packets) : 0.0,
                elapsed > 0 ? double(packets) / elapsed / 1e6 : 0.0);
}

// readv() per packet (read_burst) against N unlinked io_uring READV per
// io_uring_enter, until the queue is dry.
int bench_read(ports::TapDevice& tap, const std::string& how, size_t batch_size) {
    constexpr size_t kBufferSize = 2048;
    std::vector<std::vector<uint8_t>> data(batch_size, std::vector<uint8_t>(kBufferSize));
    packet::PacketBurst buffers;  // empty buffers lent to the reads
    for (size_t i = 0; i < batch_size; ++i) {
        buffers.free_iovecs()[0] = {data[i].data(), data[i].size()};
        buffers.push(1, kBufferSize, static_cast<uint32_t>(i));
    }
    std::vector<int> lengths(batch_size);
    std::unique_ptr<io::UringBatch> ring;
    if (how == "io_uring") {
        ring = std::make_unique<io::UringBatch>(static_cast<unsigned>(batch_size));
        ring->register_fd(tap.fd());
    }
    wait_for_go();
    uint64_t packets = 0;
    uint64_t calls = 0;
    const auto start = Clock::now();
    for (bool dry = false; !dry;) {
        size_t got = 0;
        if (ring) {
            ring->run(io::UringBatch::Op::readv, tap.fd(), buffers, 0, batch_size, lengths.data(),
                      /*linked=*/false);
            for (size_t i = 0; i < batch_size; ++i) {
                lengths[i] >= 0 ? ++got : (dry = true);
            }
        } else {
            const io::ReadBurst burst = io::read_burst(tap.fd(), buffers, lengths);
            got = burst.packets;
            dry = burst.stop != 0;
        }
        packets += got;
        ++calls;
    }
    print_read_result(how, batch_size, packets, calls,
                      std::chrono::duration<double>(Clock::now() - start).count());
    return 0;
}

// IORING_OP_READ_MULTISHOT (Linux 6.7): Debian 12's liburing 2.3 predates
// the opcode, so it is prepared by number.
constexpr uint8_t kOpReadMultishot = 49;

// One multishot READ into a ring of `entries` provided buffers, re-armed
// whenever the kernel ends it (a completion without IORING_CQE_F_MORE);
// each buffer goes back into the ring as soon as its completion is counted.
// The queue is dry when no completion came for kDryNs; the drain time ends
// at the last completion.
int bench_read_multishot(ports::TapDevice& tap, size_t entries) {
    constexpr size_t kBufferSize = 2048;
    constexpr uint16_t kGroup = 0;
    constexpr long kDryNs = 5'000'000;
    io_uring ring{};
    io_uring_params params{};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (const int ret = io_uring_queue_init_params(256, &ring, &params); ret < 0) {
        std::fprintf(stderr, "tap_io_bench: io_uring_queue_init: %s\n", std::strerror(-ret));
        return 1;
    }
    std::vector<uint8_t> data(entries * kBufferSize);
    const size_t ring_bytes = entries * sizeof(io_uring_buf);
    void* mem =
        mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("tap_io_bench: mmap");
        return 1;
    }
    auto* buffers = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(buffers);
    const int mask = io_uring_buf_ring_mask(static_cast<uint32_t>(entries));
    for (size_t i = 0; i < entries; ++i) {
        io_uring_buf_ring_add(buffers, data.data() + i * kBufferSize, kBufferSize,
                              static_cast<uint16_t>(i), mask, static_cast<int>(i));
    }
    io_uring_buf_ring_advance(buffers, static_cast<int>(entries));
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(mem);
    reg.ring_entries = static_cast<uint32_t>(entries);
    reg.bgid = kGroup;
    if (const int ret = io_uring_register_buf_ring(&ring, &reg, 0); ret < 0) {
        std::fprintf(stderr, "tap_io_bench: io_uring_register_buf_ring: %s\n", std::strerror(-ret));
        return 1;
    }
    auto arm = [&] {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        io_uring_prep_rw(kOpReadMultishot, sqe, tap.fd(), nullptr, 0, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = kGroup;
    };
    wait_for_go();
    uint64_t packets = 0;
    uint64_t arms = 0;
    const auto start = Clock::now();
    auto last = start;
    arm();
    ++arms;
    for (;;) {
        __kernel_timespec dry{.tv_sec = 0, .tv_nsec = kDryNs};
        io_uring_cqe* cqe = nullptr;
        const int ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &dry, nullptr);
        if (ret == -ETIME) {
            break;
        }
        if (ret < 0 && ret != -EINTR) {
            std::fprintf(stderr, "tap_io_bench: io_uring_submit_and_wait: %s\n",
                         std::strerror(-ret));
            return 1;
        }
        unsigned head = 0;
        unsigned seen = 0;
        bool rearm = false;
        int returned = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            ++seen;
            if (cqe->res >= 0 && (cqe->flags & IORING_CQE_F_BUFFER) != 0) {
                ++packets;
                const auto bid = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
                io_uring_buf_ring_add(buffers, data.data() + size_t{bid} * kBufferSize, kBufferSize,
                                      bid, mask, returned++);
            } else if (cqe->res < 0 && cqe->res != -ENOBUFS) {
                std::fprintf(stderr, "tap_io_bench: multishot read: %s\n",
                             std::strerror(-cqe->res));
                return 1;
            }
            rearm = rearm || (cqe->flags & IORING_CQE_F_MORE) == 0;
        }
        io_uring_buf_ring_advance(buffers, returned);
        io_uring_cq_advance(&ring, seen);
        if (seen != 0) {
            last = Clock::now();
        }
        if (rearm) {
            arm();
            ++arms;
        }
    }
    print_read_result("multishot", entries, packets, arms,
                      std::chrono::duration<double>(last - start).count());
    io_uring_queue_exit(&ring);
    munmap(mem, ring_bytes);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"vnetd's batched tap I/O (src/io) alone against a tap"};
    app.require_subcommand(1);
    ports::TapOptions options;
    std::string how;
    size_t batch = 64;
    auto* write_cmd = app.add_subcommand("write", "write batches of one frame for --seconds");
    double seconds = 1;
    size_t size = 64;
    write_cmd->add_option("--name", options.name, "tap name (created if missing)")->required();
    write_cmd->add_option("--how", how, "io_uring, writev or io_uring-unlinked")
        ->required()
        ->check(CLI::IsMember({"io_uring", "writev", "io_uring-unlinked"}));
    write_cmd->add_option("--seconds", seconds, "how long")->check(CLI::Range(0.1, 600.0));
    write_cmd->add_option("--batch", batch, "packets per submission (one burst: at most 64)")
        ->check(CLI::Range(1, int{packet::kMaxBurstPackets}));
    write_cmd->add_option("--size", size, "frame bytes")->check(CLI::Range(14, 65535));
    auto* read_cmd = app.add_subcommand("read", "drain the tap's queue once stdin says so");
    unsigned txqueuelen = 0;
    read_cmd->add_option("--name", options.name, "tap name (created if missing)")->required();
    read_cmd->add_option("--how", how, "readv, io_uring or multishot")
        ->required()
        ->check(CLI::IsMember({"readv", "io_uring", "multishot"}));
    read_cmd
        ->add_option("--batch", batch,
                     "packets per call (one burst: at most 64); multishot: provided buffers "
                     "(a power of two)")
        ->check(CLI::Range(1, 4096));
    read_cmd->add_option("--txqueuelen", txqueuelen, "SIOCSIFTXQLEN: how much the queue holds");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (txqueuelen != 0) {
        options.txqueuelen = txqueuelen;
    }
    try {
        ports::TapDevice tap(options);
        if (write_cmd->parsed()) {
            return bench_write(tap, how, seconds, batch, size);
        }
        if (how == "multishot") {
            if ((batch & (batch - 1)) != 0) {
                std::fprintf(stderr, "tap_io_bench: multishot needs a power of two --batch\n");
                return 2;
            }
            return bench_read_multishot(tap, batch);
        }
        if (batch > packet::kMaxBurstPackets) {
            std::fprintf(stderr, "tap_io_bench: --batch is at most %u for %s\n",
                         unsigned{packet::kMaxBurstPackets}, how.c_str());
            return 2;
        }
        return bench_read(tap, how, batch);
    } catch (const ports::PortSetupError& e) {
        std::fprintf(stderr, "tap_io_bench: %s\n", e.what());
        return 1;
    }
}
