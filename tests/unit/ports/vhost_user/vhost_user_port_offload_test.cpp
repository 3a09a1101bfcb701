// Another guest's packets into a VhostUserPort's RX ring (transmit_burst,
// the sink cross-connects and the switch call): each goes through the
// pair's OffloadAdaptation for what this guest negotiated (here VERSION_1
// only: no GUEST_CSUM, no TSO, no MRG_RXBUF), a hostile sender's header is
// a drop counted on this port, and a segmented frame the ring ran out in
// the middle of resumes where it stopped when the burst is retried.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "unit/ports/vhost_user/guest_rx_harness.hpp"
#include "unit/virtio/net/offload_frames.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using namespace virtio::test;

class VhostUserPortOffload : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(guest.port.queue_ready(0)); }

    // A burst of one packet in plain memory (the sender's), as a TX ring
    // hands it over: 12-byte header, then the frame.
    void one_packet_burst(const std::vector<uint8_t>& packet) {
        bytes = packet;
        burst.clear();
        burst.header_size = 12;
        burst.free_iovecs()[0] = iovec{bytes.data(), bytes.size()};
        burst.push(1, static_cast<uint32_t>(bytes.size()), 7);
    }
    std::vector<uint8_t> rx_packet(uint16_t slot) {
        const uint8_t* b = guest.mem.host + GuestRxHarness::kBuffersGpa +
                           uint64_t{slot} * GuestRxHarness::kBufferSize;
        return {b, b + guest.used_len(0, slot)};
    }
    uint64_t drops(packet::DropReason r) {
        return guest.port.tx_counters(0).drops[static_cast<size_t>(r)].get();
    }

    GuestRxHarness guest;
    packet::PacketBurst burst;
    std::vector<uint8_t> bytes;
};

TEST_F(VhostUserPortOffload, a_gso_frame_resumes_at_the_segment_the_ring_ran_out_at) {
    Frame f = make_frame({.payload = 3000});  // 3 segments of 1448, 1448, 104
    make_partial(f);
    one_packet_burst(sender_packet(
        {virtio::NetHeader::kFlagNeedsCsum, virtio::NetHeader::kGsoTcpV4, 54, 1448, 34, 16}, f));
    guest.post_rx_buffers(2);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 0);  // not taken: the caller retries it
    EXPECT_EQ(guest.used_idx(), 2);
    guest.post_rx_buffers(2);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 1);
    EXPECT_EQ(guest.used_idx(), 3);  // the third segment only: none twice
    const uint32_t lens[] = {12 + 54 + 1448, 12 + 54 + 1448, 12 + 54 + 104};
    for (uint16_t i = 0; i < 3; ++i) {
        const std::vector<uint8_t> p = rx_packet(i);
        ASSERT_EQ(p.size(), lens[i]) << i;
        const std::vector<uint8_t> seg(p.begin() + 12, p.end());
        EXPECT_EQ(be32_at(seg, 34 + 4), 0x10000000u + i * 1448u) << i;
        EXPECT_TRUE(l4_checksum_valid(seg, 14, 34, false, false)) << i;
        EXPECT_EQ(p[0], 0);            // no GUEST_CSUM: flags 0
        EXPECT_EQ(le16_at(p, 10), 1);  // num_buffers
    }
    EXPECT_EQ(guest.port.tx_counters(0).packets.get(), 3u);
    EXPECT_EQ(guest.port.tx_counters(0).total_drops(), 0u);
}

// The sender dropped the frame the ring ran out in (a switch's hold that
// ended) and put the next one in the same buffer, of the same length under
// the same token: that one is delivered whole, from its first segment.
TEST_F(VhostUserPortOffload, a_new_frame_in_a_cut_off_frames_buffer_is_delivered_whole) {
    const SenderHeader tso{
        virtio::NetHeader::kFlagNeedsCsum, virtio::NetHeader::kGsoTcpV4, 54, 1448, 34, 16};
    Frame f = make_frame({.payload = 3000});
    make_partial(f);
    one_packet_burst(sender_packet(tso, f));
    guest.post_rx_buffers(2);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 0);
    EXPECT_EQ(guest.used_idx(), 2);
    Frame next = make_frame({.payload = 3000, .seq = 0x20000000});
    make_partial(next);
    const std::vector<uint8_t> packet = sender_packet(tso, next);
    ASSERT_EQ(packet.size(), bytes.size());
    std::memcpy(bytes.data(), packet.data(), packet.size());  // in place: same address
    guest.post_rx_buffers(3);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 1);
    ASSERT_EQ(guest.used_idx(), 5);  // all three of its segments
    for (uint16_t i = 0; i < 3; ++i) {
        const std::vector<uint8_t> p = rx_packet(static_cast<uint16_t>(2 + i));
        const std::vector<uint8_t> seg(p.begin() + 12, p.end());
        EXPECT_EQ(be32_at(seg, 34 + 4), 0x20000000u + i * 1448u) << i;
    }
}

TEST_F(VhostUserPortOffload, a_plain_frame_leaves_its_whole_header_written_num_buffers_one) {
    // The buffer holds what the guest left in it: every header byte the
    // receiver reads, num_buffers too, must be ours (NetRxQueue leaves the
    // one-buffer count to the header OffloadAdaptation writes).
    std::memset(guest.mem.host + GuestRxHarness::kBuffersGpa, 0xff, GuestRxHarness::kBufferSize);
    Frame f = make_frame({.payload = 100});
    one_packet_burst(sender_packet({0, virtio::NetHeader::kGsoNone, 0, 0, 0, 0}, f));
    guest.post_rx_buffers(1);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 1);
    const std::vector<uint8_t> p = rx_packet(0);
    ASSERT_EQ(p.size(), 12 + f.bytes.size());
    for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(p[i], 0) << i;
    }
    EXPECT_EQ(le16_at(p, 10), 1);  // num_buffers
    EXPECT_TRUE(std::equal(f.bytes.begin(), f.bytes.end(), p.begin() + 12));
}

TEST_F(VhostUserPortOffload, a_hostile_header_is_taken_and_counted_as_a_drop_on_this_port) {
    Frame f = make_frame({.payload = 3000});
    one_packet_burst(sender_packet(
        {virtio::NetHeader::kFlagNeedsCsum, virtio::NetHeader::kGsoTcpV4, 54, 1448, 34, 6}, f));
    guest.post_rx_buffers(4);
    EXPECT_EQ(guest.port.transmit_burst(0, burst), 1);
    EXPECT_EQ(guest.used_idx(), 0);
    EXPECT_EQ(drops(packet::DropReason::bad_checksum_offsets), 1u);
    EXPECT_EQ(guest.port.tx_counters(0).total_drops(), 1u);
}

}  // namespace
}  // namespace vnet::ports
