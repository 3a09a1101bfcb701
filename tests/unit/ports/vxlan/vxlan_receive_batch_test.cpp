// How VxlanReceiveBatch splits what it receives into inner frames, and what
// it drops (ports/vxlan/vxlan_receive_batch.hpp). The messages here are
// written straight into its buffers (accept_message), so they can be what
// no kernel would hand over: a gso_size of 0, a truncated message.
#include "ports/vxlan/vxlan_receive_batch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "unit/ports/vxlan/vxlan_frames.hpp"

namespace vnet::ports {
namespace {

constexpr uint32_t kVni = 42;

// Writes at `offset` of buffer `b` a VXLAN datagram: `header` then inner
// frame `id` of `inner_len` bytes. Returns the datagram's length.
uint32_t put_datagram(VxlanReceiveBatch& batch, uint16_t b, uint32_t offset, uint32_t id,
                      uint32_t inner_len, const VxlanHeader& header = make_vxlan_header(kVni)) {
    uint8_t* p = batch.buffer_data(b) + offset;
    std::memcpy(p, header.data(), header.size());
    const std::vector<uint8_t> f = test::inner_frame(id, inner_len);
    std::memcpy(p + kVxlanHeaderSize, f.data(), f.size());
    return static_cast<uint32_t>(kVxlanHeaderSize + inner_len);
}

void expect_frame(const VxlanReceivedFrame& f, uint32_t id, uint32_t len) {
    ASSERT_EQ(f.len, len);
    EXPECT_EQ(std::vector<uint8_t>(f.data, f.data + f.len), test::inner_frame(id, len));
}

TEST(VxlanReceiveBatch, splits_a_gro_message_by_its_gso_size_the_last_one_shorter) {
    VxlanReceiveBatch batch(kVni, 2);
    uint32_t len = 0;
    len += put_datagram(batch, 0, len, 0, 100);
    len += put_datagram(batch, 0, len, 1, 100);
    len += put_datagram(batch, 0, len, 2, 50);
    EXPECT_EQ(batch.accept_message(0, len, 0, 108), 3u);
    ASSERT_EQ(batch.ready(), 3u);
    expect_frame(batch.ready_frame(0), 0, 100);
    expect_frame(batch.ready_frame(1), 1, 100);
    expect_frame(batch.ready_frame(2), 2, 50);
    EXPECT_EQ(batch.ready_frame(0).data, batch.buffer_data(0) + kVxlanHeaderSize);  // no copy
    EXPECT_EQ(batch.counters().frames_received.get(), 3u);
    EXPECT_EQ(batch.counters().messages_received.get(), 1u);
}

TEST(VxlanReceiveBatch, a_message_without_gso_size_is_one_datagram) {
    VxlanReceiveBatch batch(kVni, 1);
    const uint32_t len = put_datagram(batch, 0, 0, 7, 1400);
    EXPECT_EQ(batch.accept_message(0, len, 0, std::nullopt), 1u);
    expect_frame(batch.ready_frame(0), 7, 1400);
}

TEST(VxlanReceiveBatch, drops_hostile_datagrams_by_reason_and_keeps_the_rest) {
    VxlanReceiveBatch batch(kVni, 1);
    // Five 30-byte datagrams: good, no I flag, VNI 43, good with reserved
    // bits set (ignored), and a 21-byte tail: one byte short of a frame.
    uint32_t len = 0;
    len += put_datagram(batch, 0, len, 0, 22);
    len += put_datagram(batch, 0, len, 1, 22, VxlanHeader{0xf7, 0, 0, 0, 0, 0, 42, 0});
    len += put_datagram(batch, 0, len, 2, 22, make_vxlan_header(43));
    len += put_datagram(batch, 0, len, 3, 22, VxlanHeader{0xff, 0xff, 0xff, 0xff, 0, 0, 42, 0xff});
    len += put_datagram(batch, 0, len, 4, 13);
    EXPECT_EQ(batch.accept_message(0, len, 0, 30), 2u);
    ASSERT_EQ(batch.ready(), 2u);
    expect_frame(batch.ready_frame(0), 0, 22);
    expect_frame(batch.ready_frame(1), 3, 22);
    const VxlanReceiveCounters& c = batch.counters();
    EXPECT_EQ(c.dropped_no_vni_flag.get(), 1u);
    EXPECT_EQ(c.dropped_wrong_vni.get(), 1u);
    EXPECT_EQ(c.dropped_too_short.get(), 1u);
    EXPECT_EQ(c.frames_received.get(), 2u);
}

TEST(VxlanReceiveBatch, drops_a_whole_message_whose_gso_size_does_not_fit_it) {
    VxlanReceiveBatch batch(kVni, 1);
    const uint32_t len = put_datagram(batch, 0, 0, 0, 100);
    EXPECT_EQ(batch.accept_message(0, len, 0, 0), 0u);
    EXPECT_EQ(batch.accept_message(0, len, 0, len + 1), 0u);
    EXPECT_EQ(batch.counters().dropped_bad_gso_size.get(), 2u);
    // 129 datagrams of 22 bytes: more than a GRO message may hold.
    EXPECT_EQ(batch.accept_message(0, 129 * 22, 0, 22), 0u);
    EXPECT_EQ(batch.counters().dropped_too_many_segments.get(), 1u);
    EXPECT_EQ(batch.accept_message(0, len, MSG_TRUNC, std::nullopt), 0u);
    EXPECT_EQ(batch.counters().dropped_truncated.get(), 1u);
    EXPECT_EQ(batch.accept_message(0, 0, 0, std::nullopt), 0u);
    EXPECT_EQ(batch.counters().dropped_too_short.get(), 1u);
    EXPECT_EQ(batch.ready(), 0u);
    EXPECT_EQ(batch.counters().frames_received.get(), 0u);
    EXPECT_EQ(batch.free_buffers(), 1);
}

// What a veth hands a namespace's UDP socket from a kernel vxlan sender
// there: one 64 KB tunnel GSO packet, its gso_size the inner MSS. Cut at
// that size it would be a train of garbage; its first frame's IP length
// says it is one packet, and it is dropped whole. A train of whole
// IPv4 and IPv6 frames is kept.
TEST(VxlanReceiveBatch, one_gso_packet_is_not_taken_for_a_train_of_datagrams) {
    VxlanReceiveBatch batch(kVni, 1);
    auto put_ip = [&](uint32_t offset, uint32_t inner_len, bool ipv6, uint32_t l3_len) {
        const uint32_t n = put_datagram(batch, 0, offset, offset, inner_len);
        uint8_t* frame = batch.buffer_data(0) + offset + kVxlanHeaderSize;
        frame[12] = ipv6 ? 0x86 : 0x08;
        frame[13] = ipv6 ? 0xdd : 0x00;
        frame[14] = ipv6 ? 0x60 : 0x45;
        const uint32_t field = ipv6 ? l3_len - 40 : l3_len;
        frame[14 + (ipv6 ? 4 : 2)] = static_cast<uint8_t>(field >> 8);
        frame[14 + (ipv6 ? 5 : 3)] = static_cast<uint8_t>(field);
        return n;
    };
    for (const bool ipv6 : {false, true}) {
        // 30,000 bytes of one packet, cut at 1,398.
        const uint32_t len = put_ip(0, 30000 - kVxlanHeaderSize, ipv6, 30000 - 22);
        EXPECT_EQ(batch.accept_message(0, len, 0, 1398), 0u) << ipv6;
    }
    EXPECT_EQ(batch.counters().dropped_tunnel_gso.get(), 2u);
    EXPECT_EQ(batch.ready(), 0u);
    // A train: each datagram 1,472 bytes, its frame's IP length 1,450.
    for (const bool ipv6 : {false, true}) {
        uint32_t len = 0;
        len += put_ip(len, 1464, ipv6, 1450);
        len += put_ip(len, 1464, ipv6, 1450);
        EXPECT_EQ(batch.accept_message(0, len, 0, 1472), 2u) << ipv6;
        batch.take(2);
        batch.complete(2);
    }
    EXPECT_EQ(batch.counters().dropped_tunnel_gso.get(), 2u);
}

TEST(VxlanReceiveBatch, a_buffer_is_free_again_once_all_its_frames_are_done) {
    VxlanReceiveBatch batch(kVni, 2);
    uint32_t len = 0;
    len += put_datagram(batch, 0, len, 0, 60);
    len += put_datagram(batch, 0, len, 1, 60);
    ASSERT_EQ(batch.accept_message(0, len, 0, 68), 2u);
    ASSERT_EQ(batch.accept_message(1, put_datagram(batch, 1, 0, 2, 60), 0, std::nullopt), 1u);
    EXPECT_EQ(batch.free_buffers(), 0);

    batch.take(2);
    EXPECT_EQ(batch.ready(), 1u);
    EXPECT_EQ(batch.taken(), 2u);
    expect_frame(batch.ready_frame(0), 2, 60);  // ready_frame skips taken frames
    batch.complete(1);
    EXPECT_EQ(batch.free_buffers(), 0);  // frame 1 still holds buffer 0
    batch.complete(1);
    EXPECT_EQ(batch.free_buffers(), 1);
    batch.take(1);
    batch.complete(1);
    EXPECT_EQ(batch.free_buffers(), 2);
    EXPECT_EQ(batch.taken(), 0u);
    EXPECT_EQ(batch.ready(), 0u);
}

TEST(VxlanReceiveBatch, the_frame_ring_wraps) {
    VxlanReceiveBatch batch(kVni, 1);  // a ring of 128 frames
    for (uint32_t round = 0; round < 5; ++round) {
        uint32_t len = 0;
        for (uint32_t i = 0; i < 50; ++i) {
            len += put_datagram(batch, 0, len, round * 50 + i, 30);
        }
        ASSERT_EQ(batch.accept_message(0, len, 0, 38), 50u);
        for (uint32_t i = 0; i < 50; ++i) {
            expect_frame(batch.ready_frame(i), round * 50 + i, 30);
        }
        batch.take(50);
        batch.complete(50);
        ASSERT_EQ(batch.free_buffers(), 1);
    }
}

TEST(VxlanReceiveBatch, rejects_a_buffer_count_of_zero) {
    EXPECT_THROW(VxlanReceiveBatch(kVni, 0), std::invalid_argument);
}

}  // namespace
}  // namespace vnet::ports
