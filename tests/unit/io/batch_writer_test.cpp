// BatchWriter: every packet is one write, in order, with a result each; a
// packet that would block stops the batch and is reported as such, in both
// modes, against sockets and pipes (no privileges needed).
#include "io/batch_writer.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "unit/io/packet_io_test_support.hpp"

namespace vnet::io {
namespace {

using test::PacketPipe;
using test::SmallPipe;
using test::TestPackets;

class BatchWriterTest : public ::testing::TestWithParam<BatchMode> {
protected:
    BatchWriter make_writer(unsigned depth = BatchWriter::kDefaultRingDepth) {
        return BatchWriter(GetParam(), depth, "batch-writer-test");
    }
};

TEST_P(BatchWriterTest, uses_the_requested_mode_when_the_kernel_allows_it) {
    BatchWriter writer = make_writer();
    if (GetParam() == BatchMode::io_uring && writer.mode() != BatchMode::io_uring) {
        GTEST_SKIP() << "io_uring is not available here";
    }
    EXPECT_EQ(writer.mode(), GetParam());
}

TEST_P(BatchWriterTest, writes_each_packet_as_one_message_and_reports_its_length) {
    PacketPipe pipe;
    ASSERT_TRUE(pipe.writer.valid());
    TestPackets packets({60, 1, 1500, 200, 64, 9000, 42, 100});
    std::vector<int> results(packets.size(), 12345);

    BatchWriter writer = make_writer();
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());

    for (size_t i = 0; i < packets.size(); ++i) {
        EXPECT_EQ(results[i], packets.wire_size(i)) << "packet " << i;
        EXPECT_EQ(pipe.read_one(), packets.wire_bytes(i)) << "packet " << i;
    }
    EXPECT_TRUE(pipe.read_one().empty());
}

TEST_P(BatchWriterTest, an_empty_batch_writes_nothing) {
    PacketPipe pipe;
    BatchWriter writer = make_writer();
    std::vector<int> results;
    EXPECT_EQ(writer.submit(pipe.writer.get(), {}, results), 0u);
    EXPECT_TRUE(pipe.read_one().empty());
}

TEST_P(BatchWriterTest, a_batch_larger_than_the_ring_is_written_in_order) {
    PacketPipe pipe;
    TestPackets packets = TestPackets::uniform(21, 64);
    std::vector<int> results(packets.size());

    BatchWriter writer = make_writer(/*depth=*/8);
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());
    for (size_t i = 0; i < packets.size(); ++i) {
        EXPECT_EQ(results[i], packets.wire_size(i));
        EXPECT_EQ(pipe.read_one(), packets.wire_bytes(i)) << "packet " << i;
    }
}

TEST_P(BatchWriterTest, stops_at_the_first_packet_that_would_block_and_reports_eagain) {
    SmallPipe pipe(4096);
    ASSERT_TRUE(pipe.writer.valid());
    TestPackets packets = TestPackets::uniform(6, 1488);  // 1500 bytes on the wire
    std::vector<int> results(packets.size());

    BatchWriter writer = make_writer();
    const size_t done = writer.submit(pipe.writer.get(), packets.packets(), results);

    ASSERT_GE(done, 1u);
    ASSERT_LT(done, packets.size());
    for (size_t i = 0; i < done; ++i) {
        EXPECT_EQ(results[i], 1500) << "packet " << i;
    }
    EXPECT_EQ(results[done], -EAGAIN);
    EXPECT_TRUE(is_would_block(results[done]));
    for (size_t i = done + 1; i < packets.size(); ++i) {
        EXPECT_EQ(results[i], kNotAttempted) << "packet " << i;
    }
    // Exactly the finished packets reached the pipe, whole and in order.
    EXPECT_EQ(pipe.drain(), packets.all_wire_bytes(0, done));
}

TEST_P(BatchWriterTest, the_kept_packets_go_out_once_the_fd_has_room_again) {
    SmallPipe pipe(4096);
    TestPackets packets = TestPackets::uniform(6, 1488);
    std::vector<int> results(packets.size());
    BatchWriter writer = make_writer();

    std::vector<uint8_t> received;
    size_t sent = 0;
    // What a forwarding path does: drop the finished front, retry the rest.
    packet::PacketBurst rest = packets.packets();
    for (int round = 0; round < 10 && sent < packets.size(); ++round) {
        const size_t finished = writer.submit(pipe.writer.get(), rest, results);
        sent += finished;
        rest.pop_front(static_cast<uint16_t>(finished));
        auto chunk = pipe.drain();  // the reader catches up: EPOLLOUT would fire
        received.insert(received.end(), chunk.begin(), chunk.end());
    }
    EXPECT_EQ(sent, packets.size());
    EXPECT_EQ(received, packets.all_wire_bytes(0, packets.size()));
}

TEST_P(BatchWriterTest, a_packet_that_fails_for_good_does_not_stop_the_rest) {
    PacketPipe pipe;
    // A unix datagram larger than the socket's send buffer fails with
    // EMSGSIZE whatever the buffer's fill: a permanent, per-packet error.
    int sndbuf = 4096;
    ASSERT_EQ(::setsockopt(pipe.writer.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
    TestPackets packets({100, 60000, 100, 60000, 100});
    std::vector<int> results(packets.size());

    BatchWriter writer = make_writer();
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());

    EXPECT_EQ(results, (std::vector<int>{112, -EMSGSIZE, 112, -EMSGSIZE, 112}));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(0));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(2));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(4));
}

TEST_P(BatchWriterTest, a_bad_fd_fails_every_packet_with_ebadf) {
    TestPackets packets = TestPackets::uniform(4, 64);
    std::vector<int> results(packets.size());
    BatchWriter writer = make_writer();
    EXPECT_EQ(writer.submit(-1, packets.packets(), results), packets.size());
    EXPECT_EQ(results, std::vector<int>(packets.size(), -EBADF));
}

TEST_P(BatchWriterTest, writes_through_a_registered_fixed_file_until_unregistered) {
    BatchWriter writer = make_writer();
    PacketPipe pipe;
    const bool registered = writer.register_fd(pipe.writer.get());
    if (writer.mode() == BatchMode::writev) {
        EXPECT_FALSE(registered);
    } else if (!registered) {
        GTEST_SKIP() << "kernel refuses sparse fixed-file tables";
    }
    TestPackets packets = TestPackets::uniform(5, 80);
    std::vector<int> results(packets.size());

    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());
    writer.unregister_fd(pipe.writer.get());
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());

    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < packets.size(); ++i) {
            EXPECT_EQ(pipe.read_one(), packets.wire_bytes(i));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(BothModes, BatchWriterTest,
                         ::testing::Values(BatchMode::io_uring, BatchMode::writev),
                         [](const auto& mode_info) {
                             return std::string(to_string(mode_info.param));
                         });

TEST(BatchWriter, both_modes_put_identical_bytes_and_results_on_the_wire) {
    TestPackets packets({64, 1, 300, 1500, 64, 64, 4000, 17}, /*tag=*/7);
    std::vector<uint8_t> bytes[2];
    std::vector<int> results[2];
    const BatchMode modes[2] = {BatchMode::io_uring, BatchMode::writev};
    for (int m = 0; m < 2; ++m) {
        SmallPipe pipe(65536);
        BatchWriter writer(modes[m]);
        results[m].resize(packets.size());
        EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results[m]), packets.size());
        bytes[m] = pipe.drain();
    }
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(bytes[0], bytes[1]);
    EXPECT_EQ(bytes[0], packets.all_wire_bytes(0, packets.size()));
}

// One-iovec packets go to io_uring as single-buffer WRITEs, the others as
// WRITEVs: the bytes and results must be what one writev() each gives.
TEST(BatchWriter, one_iovec_packets_put_the_same_bytes_and_results_on_the_wire) {
    for (TestPackets::Layout layout :
         {TestPackets::Layout::one_iovec, TestPackets::Layout::mixed}) {
        TestPackets packets({64, 1, 300, 1500, 64, 64, 4000, 17}, /*tag=*/9, layout);
        std::vector<uint8_t> bytes[2];
        std::vector<int> results[2];
        const BatchMode modes[2] = {BatchMode::io_uring, BatchMode::writev};
        for (int m = 0; m < 2; ++m) {
            SmallPipe pipe(65536);
            BatchWriter writer(modes[m]);
            results[m].resize(packets.size());
            EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results[m]),
                      packets.size());
            bytes[m] = pipe.drain();
        }
        EXPECT_EQ(results[0], results[1]);
        EXPECT_EQ(bytes[0], bytes[1]);
        EXPECT_EQ(bytes[0], packets.all_wire_bytes(0, packets.size()));
    }
}

TEST_P(BatchWriterTest, one_iovec_packets_keep_message_boundaries) {
    PacketPipe pipe;
    TestPackets packets({60, 1, 1500, 200, 64, 9000, 42, 100}, 3, TestPackets::Layout::mixed);
    std::vector<int> results(packets.size(), 12345);
    BatchWriter writer = make_writer();
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());
    for (size_t i = 0; i < packets.size(); ++i) {
        EXPECT_EQ(results[i], packets.wire_size(i)) << "packet " << i;
        EXPECT_EQ(pipe.read_one(), packets.wire_bytes(i)) << "packet " << i;
    }
}

TEST_P(BatchWriterTest, one_iovec_packets_stop_at_the_first_that_would_block) {
    SmallPipe pipe(4096);
    TestPackets packets = TestPackets::uniform(6, 1488, 5, TestPackets::Layout::one_iovec);
    std::vector<int> results(packets.size());
    BatchWriter writer = make_writer();
    const size_t done = writer.submit(pipe.writer.get(), packets.packets(), results);
    ASSERT_GE(done, 1u);
    ASSERT_LT(done, packets.size());
    for (size_t i = 0; i < done; ++i) {
        EXPECT_EQ(results[i], 1500) << "packet " << i;
    }
    EXPECT_EQ(results[done], -EAGAIN);
    for (size_t i = done + 1; i < packets.size(); ++i) {
        EXPECT_EQ(results[i], kNotAttempted) << "packet " << i;
    }
    EXPECT_EQ(pipe.drain(), packets.all_wire_bytes(0, done));
}

TEST_P(BatchWriterTest, a_one_iovec_packet_that_fails_for_good_does_not_stop_the_rest) {
    PacketPipe pipe;
    int sndbuf = 4096;
    ASSERT_EQ(::setsockopt(pipe.writer.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
    TestPackets packets({100, 60000, 100, 60000, 100}, 0, TestPackets::Layout::one_iovec);
    std::vector<int> results(packets.size());
    BatchWriter writer = make_writer();
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());
    EXPECT_EQ(results, (std::vector<int>{112, -EMSGSIZE, 112, -EMSGSIZE, 112}));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(0));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(2));
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(4));
}

TEST(BatchWriter, falls_back_to_writev_when_the_ring_cannot_be_created) {
    // io_uring_setup refuses more than IORING_MAX_ENTRIES (32768) entries.
    BatchWriter writer(BatchMode::io_uring, /*ring_depth=*/1u << 20);
    EXPECT_EQ(writer.mode(), BatchMode::writev);

    PacketPipe pipe;
    TestPackets packets = TestPackets::uniform(3, 64);
    std::vector<int> results(packets.size());
    EXPECT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());
    EXPECT_EQ(pipe.read_one(), packets.wire_bytes(0));
}

TEST(BatchWriter, a_submit_from_a_second_thread_falls_back_to_writev_losing_nothing) {
    BatchWriter writer(BatchMode::io_uring);
    if (writer.mode() != BatchMode::io_uring) {
        GTEST_SKIP() << "io_uring is not available here";
    }
    PacketPipe pipe;
    TestPackets packets = TestPackets::uniform(4, 64);
    std::vector<int> results(packets.size());
    // The first submitter (this thread) owns the ring.
    ASSERT_EQ(writer.submit(pipe.writer.get(), packets.packets(), results), packets.size());

    size_t done = 0;
    std::thread other([&] { done = writer.submit(pipe.writer.get(), packets.packets(), results); });
    other.join();

    EXPECT_EQ(done, packets.size());
    EXPECT_EQ(results, std::vector<int>(packets.size(), packets.wire_size(0)));
    EXPECT_EQ(writer.mode(), BatchMode::writev);
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < packets.size(); ++i) {
            EXPECT_EQ(pipe.read_one(), packets.wire_bytes(i)) << "round " << round;
        }
    }
}

TEST(BatchMode, names_round_trip) {
    for (BatchMode m : {BatchMode::io_uring, BatchMode::writev}) {
        EXPECT_EQ(parse_batch_mode(to_string(m)), m);
    }
    EXPECT_FALSE(parse_batch_mode("sendmmsg").has_value());
}

TEST(IsWouldBlock, covers_the_transient_errors_vhost_net_retries) {
    EXPECT_TRUE(is_would_block(-EAGAIN));
    EXPECT_TRUE(is_would_block(-ENOBUFS));
    EXPECT_TRUE(is_would_block(-ENOMEM));
    EXPECT_FALSE(is_would_block(-EINVAL));
    EXPECT_FALSE(is_would_block(-EIO));
    EXPECT_FALSE(is_would_block(64));
}

}  // namespace
}  // namespace vnet::io
