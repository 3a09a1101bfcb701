// A back-end connection over a real socket, driven by a real reactor.
#include "vhost_user/backend_connection.hpp"

#include <gtest/gtest.h>

#include "io/epoll_reactor.hpp"
#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using namespace std::chrono_literals;
using test::kNeedReply;

constexpr uint32_t kVersion = MessageHeader::kVersion;

struct ConnectionFixture {
    explicit ConnectionFixture(size_t output_limit = kDefaultOutputLimit) {
        auto [a, b] = test::make_socket_pair();
        front = std::move(a);
        connection = std::make_unique<BackendConnection>(
            reactor, std::move(b), test::test_device_config(), &observer, [this] { ++closed; },
            output_limit);
    }
    // Runs the reactor until `done` or 2 s pass.
    template <class Done>
    bool run_until(Done done) {
        const auto deadline = std::chrono::steady_clock::now() + 2s;
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            reactor.run_once(10ms);
        }
        return done();
    }
    // Sends a request, lets the back end run, returns its reply.
    ReceiveResult call(Request r, uint32_t flags, const void* payload, uint32_t size,
                       Message& reply, std::span<const int> fds = {}) {
        if (!send_message(front.get(), r, flags, payload, size, fds)) {
            return ReceiveResult::io_error;
        }
        reactor.run_once(50ms);
        return receive_message(front.get(), reply, 500ms);
    }

    io::EpollReactor reactor;
    test::RecordingObserver observer;
    UniqueFd front;
    std::unique_ptr<BackendConnection> connection;
    int closed = 0;
};

TEST(ConnectionBackend, answers_get_features_with_an_exact_reply) {
    ConnectionFixture f;
    Message reply;
    ASSERT_EQ(f.call(Request::get_features, kVersion, nullptr, 0, reply), ReceiveResult::message);
    EXPECT_EQ(reply.header.flags, 0x5u);
    EXPECT_EQ(reply.header.size, 8u);
    uint64_t features = 0;
    ASSERT_TRUE(reply.read_payload(features));
    EXPECT_EQ(features, f.connection->device()->offered_features().bits());
}

TEST(ConnectionBackend, qemu_like_start_sequence_makes_a_ring_ready) {
    ConnectionFixture f;
    test::GuestMemory mem;
    UniqueFd kick = test::make_eventfd();
    UniqueFd call = test::make_eventfd();
    Message reply;
    const uint64_t protocol = kDefaultProtocolFeatures.bits();
    ASSERT_EQ(f.call(Request::get_features, kVersion, nullptr, 0, reply), ReceiveResult::message);
    uint64_t features = 0;
    reply.read_payload(features);
    ASSERT_EQ(f.call(Request::get_protocol_features, kVersion, nullptr, 0, reply),
              ReceiveResult::message);
    ASSERT_TRUE(
        send_message(f.front.get(), Request::set_protocol_features, kVersion, &protocol, 8, {}));
    ASSERT_EQ(f.call(Request::get_queue_num, kVersion, nullptr, 0, reply), ReceiveResult::message);
    ASSERT_TRUE(send_message(f.front.get(), Request::set_owner, kVersion, nullptr, 0, {}));
    ASSERT_EQ(f.call(Request::set_features, kNeedReply, &features, 8, reply),
              ReceiveResult::message);
    MemoryTable table{};
    table.nregions = 1;
    table.regions[0] = mem.region();
    int mem_fd = mem.fd.get();
    ASSERT_EQ(f.call(Request::set_mem_table, kNeedReply, &table, memory_table_payload_size(1),
                     reply, std::span<const int>(&mem_fd, 1)),
              ReceiveResult::message);
    uint64_t ack = 1;
    reply.read_payload(ack);
    ASSERT_EQ(ack, 0u);
    VringState num{0, 256}, base{0, 0}, enable{0, 1};
    VringAddr addr{0, 0, mem.desc_uva(0), mem.used_uva(0), mem.avail_uva(0), 0};
    uint64_t index = 0;
    int kick_fd = kick.get(), call_fd = call.get();
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_num, kVersion, &num, 8, {}));
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_base, kVersion, &base, 8, {}));
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_addr, kVersion, &addr, 40, {}));
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_kick, kVersion, &index, 8,
                             std::span<const int>(&kick_fd, 1)));
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_call, kVersion, &index, 8,
                             std::span<const int>(&call_fd, 1)));
    ASSERT_EQ(f.call(Request::set_vring_enable, kNeedReply, &enable, 8, reply),
              ReceiveResult::message);
    EXPECT_TRUE(f.connection->device()->queue_ready(0));
    EXPECT_EQ(f.observer.count(test::ObserverEvent::ready), 1u);

    // Stop: GET_VRING_BASE replies with the index the worker reached.
    f.observer.stop_index_override = 5;
    VringState get{0, 0};
    ASSERT_EQ(f.call(Request::get_vring_base, kVersion, &get, 8, reply), ReceiveResult::message);
    VringState got{};
    ASSERT_TRUE(reply.read_payload(got));
    EXPECT_EQ(got.num, 5u);
    EXPECT_EQ(f.closed, 0);
}

TEST(ConnectionBackend, half_a_message_from_one_peer_does_not_stall_another) {
    io::EpollReactor reactor;
    auto [a1, b1] = test::make_socket_pair();
    auto [a2, b2] = test::make_socket_pair();
    BackendConnection stalled(reactor, std::move(b1), test::test_device_config(), nullptr, {});
    BackendConnection healthy(reactor, std::move(b2), test::test_device_config(), nullptr, {});
    ASSERT_EQ(::send(a1.get(), "\x01\x00\x00", 3, 0), 3);  // a third of a header, then silence
    ASSERT_TRUE(send_message(a2.get(), Request::get_features, kVersion, nullptr, 0, {}));
    for (int i = 0; i < 5; ++i) {
        reactor.run_once(10ms);
    }
    Message reply;
    EXPECT_EQ(receive_message(a2.get(), reply, 500ms), ReceiveResult::message);
    EXPECT_TRUE(stalled.is_open());
}

TEST(ConnectionBackend, drops_a_peer_that_does_not_read_its_replies) {
    ConnectionFixture f(/*output_limit=*/1024);
    int small = 1;  // the kernel rounds up to its minimum
    ::setsockopt(f.front.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    // Never read: replies pile up in the socket, then in the bounded queue.
    f.run_until([&] {
        for (int i = 0; i < 64; ++i) {
            if (!send_message(f.front.get(), Request::get_features, kVersion, nullptr, 0, {})) {
                return true;  // the back end closed
            }
        }
        return f.closed > 0;
    });
    EXPECT_EQ(f.closed, 1);
    EXPECT_FALSE(f.connection->is_open());
    EXPECT_EQ(f.connection->device(), nullptr);
}

TEST(ConnectionBackend, closes_on_a_header_with_the_wrong_version) {
    ConnectionFixture f;
    ASSERT_TRUE(send_message(f.front.get(), Request::get_features, 0x3, nullptr, 0, {}));
    EXPECT_TRUE(f.run_until([&] { return f.closed > 0; }));
}

TEST(ConnectionBackend, closes_on_an_oversized_payload) {
    ConnectionFixture f;
    MessageHeader h{static_cast<uint32_t>(Request::set_mem_table), kVersion, 1u << 20};
    ASSERT_EQ(::send(f.front.get(), &h, sizeof h, 0), 12);
    EXPECT_TRUE(f.run_until([&] { return f.closed > 0; }));
}

TEST(ConnectionBackend, closes_when_the_device_breaks_and_stops_its_rings) {
    ConnectionFixture f;
    VringState bad{0, 3};
    ASSERT_TRUE(send_message(f.front.get(), Request::set_vring_num, kVersion, &bad, 8, {}));
    EXPECT_TRUE(f.run_until([&] { return f.closed > 0; }));
    char byte;
    EXPECT_EQ(::recv(f.front.get(), &byte, 1, 0), 0) << "the front end sees EOF";
}

TEST(ConnectionBackend, closes_on_peer_eof) {
    ConnectionFixture f;
    f.front.reset();
    EXPECT_TRUE(f.run_until([&] { return f.closed > 0; }));
}

TEST(ConnectionBackend, a_thousand_rejected_mem_tables_over_the_socket_leak_no_fd) {
    ConnectionFixture f;
    const uint64_t protocol = kDefaultProtocolFeatures.bits();
    ASSERT_TRUE(
        send_message(f.front.get(), Request::set_protocol_features, kVersion, &protocol, 8, {}));
    UniqueFd small = test::make_memfd(4096);
    f.reactor.run_once(10ms);
    const int before = test::open_fd_count();
    MemoryTable t{};
    t.nregions = 8;
    for (auto& r : t.regions) {
        r = {0, 1 << 20, 0, 0};
    }
    int fds[8];
    std::fill(std::begin(fds), std::end(fds), small.get());
    for (int i = 0; i < 1000; ++i) {
        Message reply;
        ASSERT_EQ(f.call(Request::set_mem_table, kNeedReply, &t, memory_table_payload_size(8),
                         reply, fds),
                  ReceiveResult::message);
        uint64_t ack = 0;
        reply.read_payload(ack);
        ASSERT_NE(ack, 0u);
    }
    EXPECT_EQ(test::open_fd_count(), before);
    EXPECT_EQ(f.closed, 0);
}

}  // namespace
}  // namespace vnet::vhost_user
