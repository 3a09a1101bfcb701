// read_burst: one packet per buffer, front to back, until the buffers are
// full or the fd runs dry.
#include "io/batch_reader.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "unit/io/packet_io_test_support.hpp"

namespace vnet::io {
namespace {

using test::PacketPipe;
using test::TestPackets;

// Receive buffers shaped like a guest RX chain: a header buffer, then data.
class RxBuffers {
public:
    RxBuffers(size_t count, size_t data_size)
        : headers_(count), data_(count, std::vector<uint8_t>(data_size)), iovecs_(2 * count) {
        for (size_t i = 0; i < count; ++i) {
            iovecs_[2 * i] = {&headers_[i], sizeof(virtio::NetHeader)};
            iovecs_[2 * i + 1] = {data_[i].data(), data_[i].size()};
            std::copy_n(&iovecs_[2 * i], 2, burst_.free_iovecs().begin());
            burst_.push(2, static_cast<uint32_t>(sizeof(virtio::NetHeader) + data_size),
                        static_cast<uint32_t>(i));
        }
    }
    // Empty buffers lent to the read, as a guest's RX ring lends them.
    const packet::PacketBurst& packets() const { return burst_; }
    size_t size() const { return burst_.count; }
    std::vector<uint8_t> bytes(size_t i, int len) const {
        const auto* h = reinterpret_cast<const uint8_t*>(&headers_[i]);
        std::vector<uint8_t> out(h, h + sizeof(virtio::NetHeader));
        out.insert(out.end(), data_[i].begin(),
                   data_[i].begin() + (len - static_cast<int>(sizeof(virtio::NetHeader))));
        return out;
    }
    const virtio::NetHeader& header(size_t i) const { return headers_[i]; }

private:
    std::vector<virtio::NetHeader> headers_;
    std::vector<std::vector<uint8_t>> data_;
    std::vector<iovec> iovecs_;
    packet::PacketBurst burst_;
};

void send_all(const PacketPipe& pipe, const TestPackets& packets) {
    for (size_t i = 0; i < packets.size(); ++i) {
        const std::span<const iovec> p = packets.packets().packet_iovecs(static_cast<uint16_t>(i));
        ASSERT_EQ(::writev(pipe.writer.get(), p.data(), static_cast<int>(p.size())),
                  packets.wire_size(i));
    }
}

TEST(ReadBurst, reads_queued_packets_until_the_fd_runs_dry) {
    PacketPipe pipe;
    TestPackets sent({60, 1500, 100});
    send_all(pipe, sent);
    RxBuffers buffers(8, 2048);
    std::vector<int> lengths(buffers.size(), -1);

    const ReadBurst burst = read_burst(pipe.reader.get(), buffers.packets(), lengths);

    EXPECT_EQ(burst.packets, 3u);
    EXPECT_EQ(burst.stop, -EAGAIN);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(lengths[i], sent.wire_size(i));
        EXPECT_EQ(buffers.bytes(i, lengths[i]), sent.wire_bytes(i)) << "packet " << i;
        EXPECT_EQ(buffers.header(i).num_buffers, i);  // the header landed in its own iovec
    }
    EXPECT_EQ(lengths[3], -1);  // untouched
}

TEST(ReadBurst, stops_when_every_buffer_is_filled_and_leaves_the_rest_queued) {
    PacketPipe pipe;
    TestPackets sent = TestPackets::uniform(5, 64);
    send_all(pipe, sent);
    RxBuffers buffers(2, 2048);
    std::vector<int> lengths(buffers.size());

    ReadBurst burst = read_burst(pipe.reader.get(), buffers.packets(), lengths);
    EXPECT_EQ(burst.packets, 2u);
    EXPECT_EQ(burst.stop, 0);
    EXPECT_EQ(buffers.bytes(1, lengths[1]), sent.wire_bytes(1));

    burst = read_burst(pipe.reader.get(), buffers.packets(), lengths);
    EXPECT_EQ(burst.packets, 2u);
    EXPECT_EQ(buffers.bytes(0, lengths[0]), sent.wire_bytes(2));

    burst = read_burst(pipe.reader.get(), buffers.packets(), lengths);
    EXPECT_EQ(burst.packets, 1u);
    EXPECT_EQ(burst.stop, -EAGAIN);
    EXPECT_EQ(buffers.bytes(0, lengths[0]), sent.wire_bytes(4));
}

TEST(ReadBurst, an_empty_fd_gives_no_packets_and_eagain) {
    PacketPipe pipe;
    RxBuffers buffers(4, 2048);
    std::vector<int> lengths(buffers.size());
    const ReadBurst burst = read_burst(pipe.reader.get(), buffers.packets(), lengths);
    EXPECT_EQ(burst.packets, 0u);
    EXPECT_EQ(burst.stop, -EAGAIN);
}

TEST(ReadBurst, reports_a_failing_read_as_its_errno) {
    RxBuffers buffers(4, 2048);
    std::vector<int> lengths(buffers.size());
    const ReadBurst burst = read_burst(-1, buffers.packets(), lengths);
    EXPECT_EQ(burst.packets, 0u);
    EXPECT_EQ(burst.stop, -EBADF);
}

}  // namespace
}  // namespace vnet::io
