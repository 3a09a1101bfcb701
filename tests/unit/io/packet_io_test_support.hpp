// Test packets for the batched I/O tests: each packet is two iovecs, a
// 12-byte virtio_net_hdr and a frame, like a guest TX chain, with contents
// that differ per packet so misordering or mixing shows. With
// Layout::one_iovec the header and frame share one buffer (one iovec, as a
// guest that pushes the header in front of its frame sends them; io_uring
// writes those as single-buffer WRITEs); Layout::mixed alternates.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/unique_fd.hpp"
#include "io/packet_batch.hpp"
#include "packet/packet_burst.hpp"
#include "virtio/net_header.hpp"

namespace vnet::io::test {

class TestPackets {
public:
    enum class Layout { two_iovecs, one_iovec, mixed };

    // Packet i has a frame of frame_sizes[i] bytes.
    explicit TestPackets(const std::vector<size_t>& frame_sizes, uint8_t tag = 0,
                         Layout layout = Layout::two_iovecs) {
        headers_.resize(frame_sizes.size());
        frames_.resize(frame_sizes.size());
        iovecs_.resize(frame_sizes.size() * 2);
        for (size_t i = 0; i < frame_sizes.size(); ++i) {
            headers_[i].num_buffers = static_cast<uint16_t>(i);
            headers_[i].flags = tag;
            frames_[i].resize(frame_sizes[i]);
            for (size_t b = 0; b < frame_sizes[i]; ++b) {
                frames_[i][b] = static_cast<uint8_t>(tag + i * 31 + b);
            }
            iovecs_[2 * i] = {&headers_[i], sizeof(virtio::NetHeader)};
            iovecs_[2 * i + 1] = {frames_[i].data(), frames_[i].size()};
        }
        contiguous_.resize(frame_sizes.size());
        for (size_t i = 0; i < frame_sizes.size(); ++i) {
            const bool one = layout == Layout::one_iovec || (layout == Layout::mixed && i % 2 == 0);
            if (one) {
                contiguous_[i] = wire_bytes(i);
                iovecs_[2 * i] = {contiguous_[i].data(), contiguous_[i].size()};
            }
            const uint16_t count = one ? 1 : 2;
            std::copy_n(&iovecs_[2 * i], count, burst_.free_iovecs().begin());
            burst_.push(count, static_cast<uint32_t>(wire_size(i)), static_cast<uint32_t>(i));
        }
    }

    static TestPackets uniform(size_t count, size_t frame_size, uint8_t tag = 0,
                               Layout layout = Layout::two_iovecs) {
        return TestPackets(std::vector<size_t>(count, frame_size), tag, layout);
    }

    const packet::PacketBurst& packets() const { return burst_; }
    size_t size() const { return burst_.count; }
    int wire_size(size_t i) const {
        return static_cast<int>(sizeof(virtio::NetHeader) + frames_[i].size());
    }
    // The bytes packet i puts on the wire: header then frame. Sized up front
    // and copied into place: g++ 12 at -O3 reports a false array-bounds
    // error for vector::insert of a small array here.
    std::vector<uint8_t> wire_bytes(size_t i) const {
        std::vector<uint8_t> out(sizeof(virtio::NetHeader) + frames_[i].size());
        std::memcpy(out.data(), &headers_[i], sizeof(virtio::NetHeader));
        std::copy(frames_[i].begin(), frames_[i].end(), out.begin() + sizeof(virtio::NetHeader));
        return out;
    }
    std::vector<uint8_t> all_wire_bytes(size_t first, size_t end) const {
        size_t total = 0;
        for (size_t i = first; i < end; ++i) {
            total += static_cast<size_t>(wire_size(i));
        }
        std::vector<uint8_t> out(total);
        size_t at = 0;
        for (size_t i = first; i < end; ++i) {
            auto w = wire_bytes(i);
            std::copy(w.begin(), w.end(), out.begin() + static_cast<ptrdiff_t>(at));
            at += w.size();
        }
        return out;
    }

private:
    std::vector<virtio::NetHeader> headers_;
    std::vector<std::vector<uint8_t>> frames_;
    std::vector<std::vector<uint8_t>> contiguous_;  // header + frame, for one-iovec packets
    std::vector<iovec> iovecs_;
    packet::PacketBurst burst_;
};

// A connected SOCK_SEQPACKET pair keeps message boundaries, like a tap:
// one writev is one packet, one read returns one packet.
struct PacketPipe {
    UniqueFd writer;
    UniqueFd reader;

    PacketPipe() {
        int fds[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0) {
            writer.reset(fds[0]);
            reader.reset(fds[1]);
        }
    }

    // One message, or empty when none is queued.
    std::vector<uint8_t> read_one() const {
        std::vector<uint8_t> buf(70000);
        const ssize_t n = ::recv(reader.get(), buf.data(), buf.size(), 0);
        buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return buf;
    }
};

// A byte pipe with a one-page buffer, both ends non-blocking: it fills up
// after a few packets, which is how the tests see EAGAIN.
struct SmallPipe {
    UniqueFd writer;
    UniqueFd reader;

    explicit SmallPipe(int capacity = 4096) {
        int fds[2];
        if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0) {
            reader.reset(fds[0]);
            writer.reset(fds[1]);
            ::fcntl(writer.get(), F_SETPIPE_SZ, capacity);
        }
    }

    std::vector<uint8_t> drain() const {
        std::vector<uint8_t> out;
        uint8_t buf[4096];
        ssize_t n;
        while ((n = ::read(reader.get(), buf, sizeof buf)) > 0) {
            out.insert(out.end(), buf, buf + n);
        }
        return out;
    }
};

}  // namespace vnet::io::test
