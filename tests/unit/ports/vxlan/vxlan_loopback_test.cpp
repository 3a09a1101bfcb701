// The user-space VXLAN datapath end to end over loopback sockets: a burst
// planned by VxlanSendBatch, sent with UDP_SEGMENT, received with UDP_GRO by
// VxlanReceiveBatch (ports/vxlan/), and hostile datagrams sent raw.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <vector>

#include "common/unique_fd.hpp"
#include "ports/vxlan/vxlan_receive_batch.hpp"
#include "ports/vxlan/vxlan_send_batch.hpp"
#include "ports/vxlan/vxlan_socket.hpp"
#include "unit/ports/vxlan/vxlan_frames.hpp"

namespace vnet::ports {
namespace {

constexpr uint32_t kVni = 5001;

VxlanSocket open_socket(const sockaddr_storage& local) {
    VxlanSocketOptions o;
    o.local = local;
    return VxlanSocket("vxlan 'test'", o);
}

// Receives until `frames` frames are ready or a second passes without any.
void receive_frames(VxlanReceiveBatch& batch, int fd, uint32_t frames) {
    while (batch.ready() < frames) {
        if (batch.receive(fd) == 0) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 1000) <= 0) {
                return;
            }
        }
    }
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
    if (a.ss_family != b.ss_family) {
        return false;
    }
    if (a.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
}

// Sends frames of `lengths` (frame i has id i) from `from` to `to` as one
// planned burst; checks they arrive in order, byte for byte, from `from`.
void send_and_check(const sockaddr_storage& from_address, const sockaddr_storage& to_address,
                    const std::vector<uint32_t>& lengths, uint64_t expected_messages) {
    VxlanSocket from = open_socket(from_address);
    VxlanSocket to = open_socket(to_address);
    const std::array<sockaddr_storage, 1> vteps{to.local()};

    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(lengths.size());
    for (uint32_t id = 0; id < lengths.size(); ++id) {
        frames.push_back(test::guest_frame(id, lengths[id]));
        iovec iov = test::whole(frames.back());
        ASSERT_EQ(send.add_frame({&iov, 1}, 12, 0), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(send.messages_planned(), expected_messages);
    const VxlanSendResult r = send.send(from.fd());
    EXPECT_EQ(r.frames_sent, lengths.size());
    EXPECT_EQ(r.frames_done, lengths.size());
    EXPECT_FALSE(r.would_block);
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 1u);  // the whole burst, one call
    EXPECT_EQ(send.counters().messages_sent.get(), expected_messages);

    VxlanReceiveBatch receive(kVni, 8);
    receive_frames(receive, to.fd(), static_cast<uint32_t>(lengths.size()));
    ASSERT_EQ(receive.ready(), lengths.size());
    for (uint32_t id = 0; id < lengths.size(); ++id) {
        const VxlanReceivedFrame& f = receive.ready_frame(id);
        ASSERT_EQ(f.len, lengths[id]) << "frame " << id;
        EXPECT_EQ(std::vector<uint8_t>(f.data, f.data + f.len), test::inner_frame(id, lengths[id]))
            << "frame " << id;
        EXPECT_TRUE(same_address(receive.source(f), from.local())) << "frame " << id;
    }
    // UDP GRO hands each UDP_SEGMENT message over whole on loopback.
    EXPECT_EQ(receive.counters().messages_received.get(), expected_messages);
    EXPECT_EQ(receive.counters().frames_received.get(), lengths.size());
    receive.take(receive.ready());
    receive.complete(receive.taken());
    EXPECT_EQ(receive.free_buffers(), 8);
}

TEST(VxlanLoopback, a_burst_of_64_equal_frames_is_one_send_and_one_message_received) {
    send_and_check(test::ipv4_loopback(0), test::ipv4_loopback(0),
                   std::vector<uint32_t>(packet::kMaxBurstPackets, 60), 1);
}

TEST(VxlanLoopback, mixed_lengths_over_ipv6_arrive_in_order) {
    // Messages {1500 x3, 700}, {60}, {9000 x2, 64}: the kernel keeps a
    // shorter last segment and the receiver splits it back.
    send_and_check(test::ipv6_loopback(0), test::ipv6_loopback(0),
                   {1500, 1500, 1500, 700, 60, 9000, 9000, 64}, 3);
}

TEST(VxlanLoopback, nothing_queued_receives_nothing) {
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    VxlanReceiveBatch receive(kVni, 4);
    EXPECT_EQ(receive.receive(to.fd()), 0u);
    EXPECT_EQ(receive.ready(), 0u);
    EXPECT_EQ(receive.counters().recvmmsg_calls.get(), 1u);
    EXPECT_EQ(receive.counters().messages_received.get(), 0u);
    EXPECT_EQ(receive.counters().receive_errors.get(), 0u);
}

TEST(VxlanLoopback, hostile_datagrams_are_dropped_with_exact_reasons) {
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    const int raw = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(raw, 0);
    const sockaddr_storage dest = to.local();
    auto send_raw = [&](const std::vector<uint8_t>& bytes) {
        ASSERT_EQ(::sendto(raw, bytes.data(), bytes.size(), 0,
                           reinterpret_cast<const sockaddr*>(&dest), sizeof(sockaddr_in)),
                  static_cast<ssize_t>(bytes.size()));
    };
    auto datagram = [](const VxlanHeader& h, uint32_t id, uint32_t inner_len) {
        std::vector<uint8_t> d(h.begin(), h.end());
        const std::vector<uint8_t> f = test::inner_frame(id, inner_len);
        d.insert(d.end(), f.begin(), f.end());
        return d;
    };
    send_raw({});                                                          // empty
    send_raw(datagram(make_vxlan_header(kVni), 1, 13));                    // 21 bytes
    send_raw(datagram(VxlanHeader{0, 0, 0, 0, 0, 0x13, 0x89, 0}, 2, 60));  // no I flag
    send_raw(datagram(make_vxlan_header(kVni + 1), 3, 60));                // another VNI
    send_raw(datagram(make_vxlan_header(kVni), 4, 14));                    // the smallest good one
    send_raw(datagram(make_vxlan_header(kVni), 5, 9000));                  // a good jumbo
    ::close(raw);

    VxlanReceiveBatch receive(kVni, 16);
    receive_frames(receive, to.fd(), 2);
    // Wait for the drops too: every datagram is one message.
    while (receive.counters().messages_received.get() < 6 && receive.receive(to.fd()) == 0) {
        pollfd p{to.fd(), POLLIN, 0};
        if (::poll(&p, 1, 1000) <= 0) {
            break;
        }
    }
    const VxlanReceiveCounters& c = receive.counters();
    EXPECT_EQ(c.messages_received.get(), 6u);
    EXPECT_EQ(c.dropped_too_short.get(), 2u);
    EXPECT_EQ(c.dropped_no_vni_flag.get(), 1u);
    EXPECT_EQ(c.dropped_wrong_vni.get(), 1u);
    EXPECT_EQ(c.dropped_bad_gso_size.get(), 0u);
    EXPECT_EQ(c.frames_received.get(), 2u);
    ASSERT_EQ(receive.ready(), 2u);
    EXPECT_EQ(receive.ready_frame(0).len, 14u);
    EXPECT_EQ(receive.ready_frame(1).len, 9000u);
    EXPECT_EQ(std::vector<uint8_t>(receive.ready_frame(1).data, receive.ready_frame(1).data + 9000),
              test::inner_frame(5, 9000));
    // The buffers of dropped messages are free at once.
    EXPECT_EQ(receive.free_buffers(), 14);
}

TEST(VxlanLoopback, a_refused_message_is_dropped_and_the_ones_after_it_still_go) {
    // A v6-only socket refuses the IPv4 VTEP (ENETUNREACH): sendmmsg sends
    // message 0 (frames 0, 1 and 3: the VTEP's) and stops at 1, the retry
    // fails on 1 alone (dropped).
    VxlanSocket from = open_socket(test::ipv6_loopback(0));
    VxlanSocket to = open_socket(test::ipv6_loopback(0));
    const std::array<sockaddr_storage, 2> vteps{to.local(), test::ipv4_loopback(4789)};
    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(4);
    for (uint16_t vtep : {0, 0, 1, 0}) {
        frames.push_back(test::guest_frame(static_cast<uint32_t>(frames.size()), 100));
        iovec iov = test::whole(frames.back());
        ASSERT_EQ(send.add_frame({&iov, 1}, 12, vtep), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(send.messages_planned(), 2);
    const VxlanSendResult r = send.send(from.fd());
    EXPECT_EQ(r.frames_done, 4);
    EXPECT_EQ(r.frames_sent, 3);
    EXPECT_FALSE(r.would_block);
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 2u);
    EXPECT_EQ(send.counters().dropped_unreachable.get(), 1u);
    EXPECT_EQ(send.counters().messages_sent.get(), 1u);

    VxlanReceiveBatch receive(kVni, 4);
    receive_frames(receive, to.fd(), 3);
    ASSERT_EQ(receive.ready(), 3u);
    for (uint32_t i = 0; i < 3; ++i) {
        const uint32_t id = i < 2 ? i : 3;
        EXPECT_EQ(std::vector<uint8_t>(receive.ready_frame(i).data,
                                       receive.ready_frame(i).data + receive.ready_frame(i).len),
                  test::inner_frame(id, 100));
    }
}

TEST(VxlanLoopback, a_full_receiver_reads_nothing_until_frames_are_done) {
    VxlanSocket from = open_socket(test::ipv4_loopback(0));
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    const std::array<sockaddr_storage, 1> vteps{to.local()};
    VxlanSendBatch send(kVni);
    std::vector<uint8_t> frame = test::guest_frame(0, 100);
    iovec iov = test::whole(frame);
    for (int i = 0; i < 3; ++i) {  // three datagrams, three messages
        send.begin(vteps);
        ASSERT_EQ(send.add_frame({&iov, 1}, 12, 0), VxlanFrameVerdict::planned);
        ASSERT_EQ(send.send(from.fd()).frames_sent, 1);
    }
    VxlanReceiveBatch receive(kVni, 2);
    receive_frames(receive, to.fd(), 2);
    ASSERT_EQ(receive.ready(), 2u);
    EXPECT_EQ(receive.receive(to.fd()), 0u);  // no free buffer: no call
    EXPECT_EQ(receive.counters().recvmmsg_calls.get(), 1u);
    receive.take(1);
    receive.complete(1);
    EXPECT_EQ(receive.receive(to.fd()), 1u);
    EXPECT_EQ(receive.ready(), 2u);
}

// ---- lanes: one socket (source port) per lane ------------------------------

uint16_t port_of(const sockaddr_storage& a) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

// Plans frame `id` (100 inner bytes) toward `vtep` on `lane`.
void add_on_lane(VxlanSendBatch& send, std::vector<std::vector<uint8_t>>& frames, uint16_t vtep,
                 uint16_t lane) {
    frames.push_back(test::guest_frame(static_cast<uint32_t>(frames.size()), 100));
    iovec iov = test::whole(frames.back());
    ASSERT_EQ(send.add_frame({&iov, 1}, 12, vtep, lane), VxlanFrameVerdict::planned);
}

TEST(VxlanLoopbackLanes, two_lanes_to_one_vtep_are_two_messages_sent_on_their_own_sockets) {
    VxlanSocket lane0 = open_socket(test::ipv4_loopback(0));
    VxlanSocket lane1 = open_socket(test::ipv4_loopback(0));
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    const std::array<sockaddr_storage, 1> vteps{to.local()};
    const std::array<int, 2> fds{lane0.fd(), lane1.fd()};
    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(8);
    for (uint16_t lane : {0, 0, 0, 1, 1}) {
        add_on_lane(send, frames, 0, lane);
    }
    ASSERT_EQ(send.messages_planned(), 2);
    EXPECT_EQ(send.message_lane(0), 0);
    EXPECT_EQ(send.message_frames(0), 3);
    EXPECT_EQ(send.message_lane(1), 1);
    EXPECT_EQ(send.message_frames(1), 2);
    const VxlanSendResult r = send.send(fds);
    EXPECT_EQ(r.frames_done, 5);
    EXPECT_EQ(r.frames_sent, 5);
    EXPECT_FALSE(r.would_block);
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 2u);  // one per lane's run

    VxlanReceiveBatch receive(kVni, 4);
    receive_frames(receive, to.fd(), 5);
    ASSERT_EQ(receive.ready(), 5u);
    for (uint32_t i = 0; i < 5; ++i) {
        const VxlanReceivedFrame& f = receive.ready_frame(i);
        EXPECT_EQ(std::vector<uint8_t>(f.data, f.data + f.len), test::inner_frame(i, 100));
        EXPECT_EQ(port_of(receive.source(f)), i < 3 ? lane0.local_port() : lane1.local_port())
            << "frame " << i;
    }
}

TEST(VxlanLoopbackLanes, a_run_of_one_lane_to_two_vteps_is_one_call) {
    VxlanSocket lane0 = open_socket(test::ipv4_loopback(0));
    VxlanSocket lane1 = open_socket(test::ipv4_loopback(0));
    VxlanSocket to0 = open_socket(test::ipv4_loopback(0));
    VxlanSocket to1 = open_socket(test::ipv4_loopback(0));
    const std::array<sockaddr_storage, 2> vteps{to0.local(), to1.local()};
    const std::array<int, 2> fds{lane0.fd(), lane1.fd()};
    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(4);
    add_on_lane(send, frames, 0, 1);
    add_on_lane(send, frames, 1, 1);
    add_on_lane(send, frames, 1, 1);
    ASSERT_EQ(send.messages_planned(), 2);
    const VxlanSendResult r = send.send(fds);
    EXPECT_EQ(r.frames_sent, 3);
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 1u);
    EXPECT_EQ(send.counters().messages_sent.get(), 2u);
    VxlanReceiveBatch receive(kVni, 4);
    receive_frames(receive, to1.fd(), 2);
    ASSERT_EQ(receive.ready(), 2u);
    EXPECT_EQ(port_of(receive.source(receive.ready_frame(0))), lane1.local_port());
}

// A socket that refuses every send with EAGAIN and ignores destinations
// and cmsgs: a nonblocking TCP connection whose peer reads nothing, its
// buffers filled (a UDP socket on loopback never stays full long enough
// to test with: the kernel frees its buffer as the datagram is delivered).
struct FullSocket {
    UniqueFd listener;
    UniqueFd client;
    UniqueFd server;

    FullSocket() {
        listener.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        const sockaddr_storage any = test::ipv4_loopback(0);
        EXPECT_EQ(
            ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(sockaddr_in)),
            0);
        EXPECT_EQ(::listen(listener.get(), 1), 0);
        sockaddr_storage at{};
        socklen_t len = sizeof(at);
        ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&at), &len);
        client.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        const int small = 4096;
        ::setsockopt(client.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
        EXPECT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&at), len), 0);
        server.reset(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        ::setsockopt(server.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        ::fcntl(client.get(), F_SETFL, O_NONBLOCK);
        std::vector<uint8_t> chunk(65536, 0);
        for (int i = 0; i < 100000; ++i) {
            if (::send(client.get(), chunk.data(), chunk.size(), MSG_DONTWAIT) < 0) {
                EXPECT_EQ(errno, EAGAIN);
                break;
            }
        }
    }
};

// Messages go whole, in the order they were started: when lane 1's socket
// is full, lane 0's message, started first, has gone with frames that came
// after lane 1's; frames_done stops at lane 1's frame all the same.
TEST(VxlanLoopbackLanes, a_full_socket_on_one_lane_leaves_frames_done_at_its_first_frame) {
    VxlanSocket lane0 = open_socket(test::ipv4_loopback(0));
    VxlanSocket spare = open_socket(test::ipv4_loopback(0));
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    FullSocket full;
    const std::array<sockaddr_storage, 1> vteps{to.local()};
    std::array<int, 2> fds{lane0.fd(), full.client.get()};
    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(8);
    // Messages: {0, 1, 3, 4} on lane 0, {2} on lane 1.
    for (uint16_t lane : {0, 0, 1, 0, 0}) {
        add_on_lane(send, frames, 0, lane);
    }
    ASSERT_EQ(send.messages_planned(), 2);
    VxlanSendResult r = send.send(fds);
    EXPECT_TRUE(r.would_block);
    EXPECT_EQ(r.blocked_lane, 1);
    EXPECT_EQ(r.frames_done, 2);  // frames 0 and 1: frame 2 waits
    EXPECT_EQ(r.frames_sent, 4);  // frames 3 and 4 went, in lane 0's message
    EXPECT_FALSE(send.sent_all());
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 2u);
    EXPECT_EQ(send.counters().dropped_send_error.get(), 0u);

    fds[1] = spare.fd();  // the lane has room again
    r = send.send(fds);
    EXPECT_FALSE(r.would_block);
    EXPECT_EQ(r.frames_done, 3);  // 2, and 3 and 4 sent before
    EXPECT_EQ(r.frames_sent, 1);
    EXPECT_TRUE(send.sent_all());
    EXPECT_EQ(send.counters().sendmmsg_calls.get(), 3u);
    VxlanReceiveBatch receive(kVni, 4);
    receive_frames(receive, to.fd(), 5);
    ASSERT_EQ(receive.ready(), 5u);
    const std::array<uint32_t, 5> order{0, 1, 3, 4, 2};  // each once
    for (uint32_t i = 0; i < 5; ++i) {
        const VxlanReceivedFrame& f = receive.ready_frame(i);
        EXPECT_EQ(std::vector<uint8_t>(f.data, f.data + f.len), test::inner_frame(order[i], 100))
            << "frame " << i;
    }
}

TEST(VxlanLoopbackLanes, a_lane_with_no_socket_has_its_frames_dropped_and_counted) {
    VxlanSocket lane0 = open_socket(test::ipv4_loopback(0));
    VxlanSocket to = open_socket(test::ipv4_loopback(0));
    const std::array<sockaddr_storage, 1> vteps{to.local()};
    VxlanSendBatch send(kVni);
    send.begin(vteps);
    std::vector<std::vector<uint8_t>> frames;
    frames.reserve(4);
    add_on_lane(send, frames, 0, 3);
    add_on_lane(send, frames, 0, 0);
    const VxlanSendResult r = send.send(lane0.fd());
    EXPECT_EQ(r.frames_done, 2);
    EXPECT_EQ(r.frames_sent, 1);
    EXPECT_EQ(send.counters().dropped_send_error.get(), 1u);
}

}  // namespace
}  // namespace vnet::ports
