#include "vhost_user/connection.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>

#include "unit/vhost_user/test_support.hpp"

namespace vnet::vhost_user {
namespace {

using namespace std::chrono_literals;
using test::make_eventfd;
using test::make_socket_pair;

constexpr uint32_t kRequestFlags = MessageHeader::kVersion;

TEST(ConnectionCodec, sends_and_receives_a_message_with_payload_and_fds) {
    auto [a, b] = make_socket_pair();
    UniqueFd e1 = make_eventfd();
    UniqueFd e2 = make_eventfd();
    VringState state{3, 256};
    int fds[] = {e1.get(), e2.get()};
    ASSERT_TRUE(
        send_message(a.get(), Request::set_vring_num, kRequestFlags, &state, sizeof state, fds));

    Message m;
    ASSERT_EQ(receive_message(b.get(), m, 1000ms), ReceiveResult::message);
    EXPECT_EQ(m.request(), Request::set_vring_num);
    EXPECT_EQ(m.header.flags, kRequestFlags);
    VringState got{};
    ASSERT_TRUE(m.read_payload(got));
    EXPECT_EQ(got.index, 3u);
    EXPECT_EQ(got.num, 256u);
    ASSERT_EQ(m.fd_count, 2u);
    // The received fds are new descriptors for the same eventfds.
    uint64_t one = 1;
    ASSERT_EQ(::write(m.fds[0].get(), &one, 8), 8);
    uint64_t value = 0;
    ASSERT_EQ(::read(e1.get(), &value, 8), 8);
    EXPECT_EQ(value, 1u);
    EXPECT_NE(::fcntl(m.fds[1].get(), F_GETFD) & FD_CLOEXEC, 0) << "received fds are CLOEXEC";
}

TEST(ConnectionCodec, receives_a_message_without_payload) {
    auto [a, b] = make_socket_pair();
    ASSERT_TRUE(send_message(a.get(), Request::get_features, kRequestFlags, nullptr, 0, {}));
    Message m;
    ASSERT_EQ(receive_message(b.get(), m, 1000ms), ReceiveResult::message);
    EXPECT_EQ(m.request(), Request::get_features);
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.fd_count, 0u);
}

TEST(ConnectionCodec, partial_message_is_reassembled_and_reader_never_blocks) {
    auto [a, b] = make_socket_pair();
    MessageHeader h{static_cast<uint32_t>(Request::set_features), kRequestFlags, 8};
    uint64_t features = 0x1234;
    uint8_t bytes[20];
    std::memcpy(bytes, &h, 12);
    std::memcpy(bytes + 12, &features, 8);

    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::need_more);
    // Half a header, then a stall: the reader returns at once and keeps it.
    ASSERT_EQ(::send(a.get(), bytes, 5, 0), 5);
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::need_more);
    EXPECT_TRUE(reader.has_partial());
    ASSERT_EQ(::send(a.get(), bytes + 5, 10, 0), 10);
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::need_more);
    ASSERT_EQ(::send(a.get(), bytes + 15, 5, 0), 5);
    ASSERT_EQ(reader.read(b.get(), m), ReceiveResult::message);
    EXPECT_FALSE(reader.has_partial());
    uint64_t got = 0;
    ASSERT_TRUE(m.read_payload(got));
    EXPECT_EQ(got, 0x1234u);
}

TEST(ConnectionCodec, fds_sent_with_the_payload_part_belong_to_the_message) {
    auto [a, b] = make_socket_pair();
    MessageHeader h{static_cast<uint32_t>(Request::set_vring_kick), kRequestFlags, 8};
    ASSERT_EQ(test::send_raw(a.get(), &h, sizeof h), 12);
    UniqueFd e = make_eventfd();
    uint64_t index = 0;
    int fd = e.get();
    ASSERT_EQ(test::send_raw(a.get(), &index, 8, std::span<const int>(&fd, 1)), 8);

    MessageReader reader;
    Message m;
    ASSERT_EQ(reader.read(b.get(), m), ReceiveResult::message);
    EXPECT_EQ(m.request(), Request::set_vring_kick);
    EXPECT_EQ(m.fd_count, 1u);
}

TEST(ConnectionCodec, rejects_payload_larger_than_4096_without_reading_it) {
    auto [a, b] = make_socket_pair();
    MessageHeader h{static_cast<uint32_t>(Request::set_mem_table), kRequestFlags, 0xffffffffu};
    ASSERT_EQ(::send(a.get(), &h, sizeof h, 0), 12);
    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::payload_too_large);
    EXPECT_FALSE(reader.has_partial());
}

TEST(ConnectionCodec, rejects_header_with_wrong_version) {
    auto [a, b] = make_socket_pair();
    ASSERT_TRUE(send_message(a.get(), Request::get_features, 0x2, nullptr, 0, {}));
    Message m;
    EXPECT_EQ(receive_message(b.get(), m, 1000ms), ReceiveResult::bad_version);
}

TEST(ConnectionCodec, send_refuses_more_than_8_fds) {
    auto [a, b] = make_socket_pair();
    UniqueFd e = make_eventfd();
    int fds[9];
    for (int& f : fds) {
        f = e.get();
    }
    EXPECT_FALSE(send_message(a.get(), Request::set_mem_table, kRequestFlags, "x", 1, fds));
}

TEST(ConnectionCodec, rejects_more_than_8_fds_over_one_message_and_closes_them) {
    auto [a, b] = make_socket_pair();
    const int before = test::open_fd_count();
    {
        UniqueFd e = make_eventfd();
        int fds[8];
        for (int& f : fds) {
            f = e.get();
        }
        MessageHeader h{static_cast<uint32_t>(Request::set_mem_table), kRequestFlags, 8};
        ASSERT_EQ(test::send_raw(a.get(), &h, sizeof h, fds), 12);
        uint64_t payload = 0;
        ASSERT_EQ(test::send_raw(a.get(), &payload, 8, std::span<const int>(fds, 1)), 8);
    }
    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::too_many_fds);
    EXPECT_EQ(test::open_fd_count(), before);
}

TEST(ConnectionCodec, ctrunc_is_an_error_and_received_fds_are_closed) {
    auto [a, b] = make_socket_pair();
    const int before = test::open_fd_count();
    {
        UniqueFd e = make_eventfd();
        int fds[12];
        for (int& f : fds) {
            f = e.get();
        }
        MessageHeader h{static_cast<uint32_t>(Request::set_mem_table), kRequestFlags, 0};
        ASSERT_EQ(test::send_raw(a.get(), &h, sizeof h, fds), 12);
    }
    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::fds_truncated);
    EXPECT_EQ(test::open_fd_count(), before);
}

TEST(ConnectionCodec, peer_close_in_the_middle_of_a_message_is_reported) {
    auto [a, b] = make_socket_pair();
    ASSERT_EQ(::send(a.get(), "abcdef", 6, 0), 6);
    a.reset();
    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(b.get(), m), ReceiveResult::peer_closed);
}

// The peer closes with our request unread: the kernel resets the stream
// (ECONNRESET on our side), which is a hang-up like any other.
TEST(ConnectionCodec, peer_closing_with_our_request_unread_is_a_close_not_an_io_error) {
    auto [a, b] = make_socket_pair();
    ASSERT_TRUE(send_message(a.get(), Request::get_features, kRequestFlags, nullptr, 0, {}));
    b.reset();
    MessageReader reader;
    Message m;
    EXPECT_EQ(reader.read(a.get(), m), ReceiveResult::peer_closed);
    EXPECT_EQ(reader.last_errno(), 0);
}

TEST(ConnectionCodec, receive_times_out_when_the_peer_is_silent) {
    auto [a, b] = make_socket_pair();
    Message m;
    EXPECT_EQ(receive_message(b.get(), m, 20ms), ReceiveResult::timed_out);
}

TEST(ConnectionCodec, send_to_closed_peer_fails_without_sigpipe) {
    auto [a, b] = make_socket_pair();
    b.reset();
    EXPECT_FALSE(send_message(a.get(), Request::get_features, kRequestFlags, nullptr, 0, {}));
}

TEST(ConnectionCodec, large_message_is_sent_whole_across_a_small_socket_buffer) {
    auto [a, b] = make_socket_pair();
    int small = 1024;
    ASSERT_EQ(::setsockopt(a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    std::array<uint8_t, kMaxPayloadSize> payload{};
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<uint8_t>(i * 7);
    }
    std::thread reader([&] {
        Message m;
        ASSERT_EQ(receive_message(b.get(), m, 2000ms), ReceiveResult::message);
        EXPECT_EQ(m.size(), kMaxPayloadSize);
        EXPECT_EQ(std::memcmp(m.payload.data(), payload.data(), payload.size()), 0);
    });
    EXPECT_TRUE(send_message(a.get(), Request::set_config, kRequestFlags, payload.data(),
                             kMaxPayloadSize, {}));
    reader.join();
}

}  // namespace
}  // namespace vnet::vhost_user
