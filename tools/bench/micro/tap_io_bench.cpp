// tap_io_bench: vnetd's batched tap I/O (src/io: BatchWriter, UringBatch,
// read_burst) alone against a real tap, to price one syscall scheme against
// another without a guest or a ring in the way.
//
//   tap_io_bench write --name T --how io_uring|writev|io_uring-unlinked
//                      [--seconds S] [--batch N] [--size BYTES]
//       writes batches of one prebuilt frame for S seconds
//   tap_io_bench read --name T --how readv|io_uring [--batch N] [--txqueuelen Q]
//       prints "ready", waits for a line on stdin (fill the tap's queue in
//       between, e.g. tests/integration/tools/tap_frames.py send), then
//       drains the queue, timing it
//
// Each prints one "ok ... mpps=X" line. io_uring-unlinked is the raw ring
// without IOSQE_IO_LINK: it prices the chain that keeps packet order.
#include <sys/uio.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
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
    std::printf("ready\n");
    std::string line;
    std::getline(std::cin, line);
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
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("ok how=%s batch=%zu packets=%llu batches=%llu ns_per_packet=%.1f mpps=%.3f\n",
                how.c_str(), batch_size, static_cast<unsigned long long>(packets),
                static_cast<unsigned long long>(calls),
                packets ? elapsed * 1e9 / double(packets) : 0.0, double(packets) / elapsed / 1e6);
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
    read_cmd->add_option("--how", how, "readv or io_uring")
        ->required()
        ->check(CLI::IsMember({"readv", "io_uring"}));
    read_cmd->add_option("--batch", batch, "packets per call (one burst: at most 64)")
        ->check(CLI::Range(1, int{packet::kMaxBurstPackets}));
    read_cmd->add_option("--txqueuelen", txqueuelen, "SIOCSIFTXQLEN: how much the queue holds");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (txqueuelen != 0) {
        options.txqueuelen = txqueuelen;
    }
    try {
        ports::TapDevice tap(options);
        return write_cmd->parsed() ? bench_write(tap, how, seconds, batch, size)
                                   : bench_read(tap, how, batch);
    } catch (const ports::PortSetupError& e) {
        std::fprintf(stderr, "tap_io_bench: %s\n", e.what());
        return 1;
    }
}
