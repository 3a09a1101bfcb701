// How VxlanSendBatch plans a burst into sendmmsg messages
// (ports/vxlan/vxlan_send_batch.hpp): which frames share a UDP_SEGMENT
// message, what each message's iovecs and cmsg hold, which frames it
// leaves to the caller or drops.
#include "ports/vxlan/vxlan_send_batch.hpp"

#include <gtest/gtest.h>
#include <netinet/udp.h>

#include <array>
#include <cstring>
#include <vector>

#include "unit/ports/vxlan/vxlan_frames.hpp"

namespace vnet::ports {
namespace {

using test::guest_frame;
using test::inner_frame;
using test::whole;

constexpr uint32_t kVni = 0x123456;

class VxlanSendBatchTest : public ::testing::Test {
protected:
    VxlanSendBatchTest() {
        vteps_[0] = test::ipv4_loopback(4789);
        vteps_[1] = test::ipv6_loopback(4789);
        batch_.begin(vteps_);
    }

    // Adds frame `id` of `len` inner bytes toward `vtep`, as one iovec.
    VxlanFrameVerdict add(uint32_t id, uint32_t len, uint16_t vtep = 0) {
        storage_.push_back(guest_frame(id, len));
        iovec iov = whole(storage_.back());
        return batch_.add_frame({&iov, 1}, 12, vtep);
    }

    // Message i's segment count (frames) and segment size, and its cmsg's
    // gso_size (0 when it has none).
    uint16_t gso_size_of(uint16_t i) const {
        const msghdr& m = batch_.message(i);
        if (m.msg_controllen == 0) {
            return 0;
        }
        const cmsghdr* c = CMSG_FIRSTHDR(&m);
        EXPECT_EQ(c->cmsg_level, SOL_UDP);
        EXPECT_EQ(c->cmsg_type, UDP_SEGMENT);
        EXPECT_EQ(c->cmsg_len, CMSG_LEN(sizeof(uint16_t)));
        uint16_t v = 0;
        std::memcpy(&v, CMSG_DATA(c), sizeof(v));
        return v;
    }
    // Whether message i is addressed to `vtep`, byte for byte.
    bool addressed_to(uint16_t i, const sockaddr_storage& vtep) const {
        const msghdr& m = batch_.message(i);
        const size_t len = vtep.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
        return m.msg_name != nullptr && m.msg_namelen == len &&
               std::memcmp(m.msg_name, &vtep, len) == 0;
    }
    // What sendmmsg would finish the plan into: send() on a closed fd
    // fills names and cmsgs, then fails with EBADF and drops everything.
    void finish_plan() { (void)batch_.send(-1); }

    std::array<sockaddr_storage, 2> vteps_{};
    std::vector<std::vector<uint8_t>> storage_;
    VxlanSendBatch batch_{kVni};
};

TEST_F(VxlanSendBatchTest, frames_of_one_length_to_one_vtep_share_a_message) {
    storage_.reserve(8);
    for (uint32_t id = 0; id < 5; ++id) {
        ASSERT_EQ(add(id, 60), VxlanFrameVerdict::planned);
    }
    EXPECT_EQ(batch_.frames_planned(), 5);
    ASSERT_EQ(batch_.messages_planned(), 1);
    EXPECT_EQ(batch_.message_frames(0), 5);
    EXPECT_EQ(batch_.message_segment_size(0), 68);
    const msghdr& m = batch_.message(0);
    ASSERT_EQ(m.msg_iovlen, 10u);
    // [VXLAN header][frame] five times, the frames where the guest left them.
    std::vector<uint8_t> expected;
    for (uint32_t id = 0; id < 5; ++id) {
        const VxlanHeader h = make_vxlan_header(kVni);
        expected.insert(expected.end(), h.begin(), h.end());
        const std::vector<uint8_t> f = inner_frame(id, 60);
        expected.insert(expected.end(), f.begin(), f.end());
        EXPECT_EQ(m.msg_iov[2 * id + 1].iov_base, storage_[id].data() + 12);
    }
    EXPECT_EQ(test::gather(m.msg_iov, m.msg_iovlen), expected);
    finish_plan();
    EXPECT_EQ(gso_size_of(0), 68);
    EXPECT_TRUE(addressed_to(0, vteps_[0]));
}

TEST_F(VxlanSendBatchTest, a_message_of_one_frame_has_no_udp_segment_cmsg) {
    ASSERT_EQ(add(0, 60, 1), VxlanFrameVerdict::planned);
    finish_plan();
    ASSERT_EQ(batch_.messages_planned(), 1);
    EXPECT_EQ(batch_.message(0).msg_control, nullptr);
    EXPECT_EQ(batch_.message(0).msg_controllen, 0u);
    EXPECT_EQ(batch_.message(0).msg_namelen, sizeof(sockaddr_in6));
}

// The caller's table changed while the send waited for a full socket (a
// peer removed, its slot given to another): the message planned before
// still goes to the VTEP it was planned for.
TEST_F(VxlanSendBatchTest, a_message_keeps_its_vteps_address_when_the_table_changes) {
    ASSERT_EQ(add(0, 60, 0), VxlanFrameVerdict::planned);
    const sockaddr_storage planned = vteps_[0];
    vteps_[0] = test::ipv4_loopback(4790);
    finish_plan();
    EXPECT_TRUE(addressed_to(0, planned));
    EXPECT_FALSE(addressed_to(0, vteps_[0]));
}

TEST_F(VxlanSendBatchTest, a_shorter_frame_ends_its_message_as_the_last_segment) {
    storage_.reserve(8);
    for (uint32_t len : {100u, 100u, 60u, 100u}) {
        ASSERT_EQ(add(len, len), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(batch_.messages_planned(), 2);
    EXPECT_EQ(batch_.message_frames(0), 3);
    EXPECT_EQ(batch_.message_segment_size(0), 108);
    EXPECT_EQ(batch_.message_frames(1), 1);
    finish_plan();
    EXPECT_EQ(gso_size_of(0), 108);
    EXPECT_EQ(gso_size_of(1), 0);
}

TEST_F(VxlanSendBatchTest, a_longer_frame_starts_a_new_message) {
    storage_.reserve(8);
    for (uint32_t len : {60u, 60u, 100u, 100u}) {
        ASSERT_EQ(add(len, len), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(batch_.messages_planned(), 2);
    EXPECT_EQ(batch_.message_frames(0), 2);
    EXPECT_EQ(batch_.message_segment_size(0), 68);
    EXPECT_EQ(batch_.message_frames(1), 2);
    EXPECT_EQ(batch_.message_segment_size(1), 108);
}

// A flood goes packet by packet to every VTEP, a burst of flows
// interleaves them: a frame joins its VTEP's latest message, not only the
// last one, and send() lays each message's iovecs out in one piece, its
// frames in the order they came.
TEST_F(VxlanSendBatchTest, frames_to_another_vtep_in_between_join_their_vteps_message) {
    storage_.reserve(8);
    for (uint16_t vtep : {0, 0, 1, 0}) {
        ASSERT_EQ(add(storage_.size(), 60, vtep), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(batch_.messages_planned(), 2);
    EXPECT_EQ(batch_.message_frames(0), 3);
    EXPECT_EQ(batch_.message_frames(1), 1);
    finish_plan();
    EXPECT_TRUE(addressed_to(0, vteps_[0]));
    EXPECT_TRUE(addressed_to(1, vteps_[1]));
    EXPECT_EQ(gso_size_of(0), 68);
    std::vector<uint8_t> expected;
    for (uint32_t id : {0u, 1u, 3u}) {
        const VxlanHeader h = make_vxlan_header(kVni);
        expected.insert(expected.end(), h.begin(), h.end());
        const std::vector<uint8_t> f = inner_frame(id, 60);
        expected.insert(expected.end(), f.begin(), f.end());
    }
    const msghdr& m = batch_.message(0);
    ASSERT_EQ(m.msg_iovlen, 6u);
    EXPECT_EQ(test::gather(m.msg_iov, m.msg_iovlen), expected);
    EXPECT_EQ(test::gather(batch_.message(1).msg_iov, batch_.message(1).msg_iovlen).size(),
              8u + 60u);
}

// Joining an earlier message of the VTEP would put the frame before
// frames of its flow in a later one: only the latest is joined.
TEST_F(VxlanSendBatchTest, only_the_vteps_latest_message_is_joined) {
    storage_.reserve(8);
    ASSERT_EQ(add(0, 100, 0), VxlanFrameVerdict::planned);  // message 0
    ASSERT_EQ(add(1, 100, 1), VxlanFrameVerdict::planned);  // message 1
    ASSERT_EQ(add(2, 200, 0), VxlanFrameVerdict::planned);  // longer: message 2
    ASSERT_EQ(add(3, 100, 0), VxlanFrameVerdict::planned);  // message 2's last segment
    ASSERT_EQ(add(4, 100, 0), VxlanFrameVerdict::planned);  // 2 is closed: message 3
    ASSERT_EQ(batch_.messages_planned(), 4);
    EXPECT_EQ(batch_.message_frames(0), 1);
    EXPECT_EQ(batch_.message_frames(1), 1);
    EXPECT_EQ(batch_.message_frames(2), 2);
    EXPECT_EQ(batch_.message_frames(3), 1);
}

TEST_F(VxlanSendBatchTest, a_full_burst_of_equal_frames_is_one_message_of_64_segments) {
    storage_.reserve(packet::kMaxBurstPackets + 1);
    for (uint32_t id = 0; id < packet::kMaxBurstPackets; ++id) {
        ASSERT_EQ(add(id, 60), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(batch_.messages_planned(), 1);
    EXPECT_EQ(batch_.message_frames(0), kVxlanMaxSegmentsPerMessage);
    EXPECT_EQ(add(64, 60), VxlanFrameVerdict::batch_full);
    EXPECT_EQ(batch_.frames_planned(), 64);
}

TEST_F(VxlanSendBatchTest, a_message_stops_at_65000_payload_bytes) {
    // 1508-byte segments: 43 fit in 65,000 bytes (64,844), 44 do not.
    storage_.reserve(50);
    for (uint32_t id = 0; id < 50; ++id) {
        ASSERT_EQ(add(id, 1500), VxlanFrameVerdict::planned);
    }
    ASSERT_EQ(batch_.messages_planned(), 2);
    EXPECT_EQ(batch_.message_frames(0), 43);
    EXPECT_EQ(batch_.message_frames(1), 7);
}

TEST_F(VxlanSendBatchTest, a_virtio_header_split_across_iovecs_is_trimmed) {
    // 12-byte header as 5 + (7 header bytes + 3 frame bytes) + the rest.
    std::vector<uint8_t> bytes = guest_frame(9, 64);
    std::array<iovec, 3> pieces{
        {{bytes.data(), 5}, {bytes.data() + 5, 10}, {bytes.data() + 15, bytes.size() - 15}}};
    ASSERT_EQ(batch_.add_frame(pieces, 12, 0), VxlanFrameVerdict::planned);
    // A legacy 10-byte header, split 1 + 9 + the frame.
    std::vector<uint8_t> legacy = guest_frame(10, 64, 10);
    std::array<iovec, 3> legacy_pieces{
        {{legacy.data(), 1}, {legacy.data() + 1, 9}, {legacy.data() + 10, legacy.size() - 10}}};
    ASSERT_EQ(batch_.add_frame(legacy_pieces, 10, 0), VxlanFrameVerdict::planned);

    ASSERT_EQ(batch_.messages_planned(), 1);
    const msghdr& m = batch_.message(0);
    // [VXLAN][3 bytes][61 bytes] [VXLAN][64 bytes]: no empty piece.
    ASSERT_EQ(m.msg_iovlen, 5u);
    EXPECT_EQ(m.msg_iov[1].iov_len, 3u);
    EXPECT_EQ(m.msg_iov[2].iov_len, 61u);
    EXPECT_EQ(m.msg_iov[4].iov_len, 64u);
    std::vector<uint8_t> expected;
    for (uint32_t id : {9u, 10u}) {
        const VxlanHeader h = make_vxlan_header(kVni);
        expected.insert(expected.end(), h.begin(), h.end());
        const std::vector<uint8_t> f = inner_frame(id, 64);
        expected.insert(expected.end(), f.begin(), f.end());
    }
    EXPECT_EQ(test::gather(m.msg_iov, m.msg_iovlen), expected);
}

TEST_F(VxlanSendBatchTest, gso_and_needs_csum_frames_are_left_to_the_caller) {
    std::vector<uint8_t> gso = guest_frame(1, 3000, 12, 0, virtio::NetHeader::kGsoTcpV4);
    std::vector<uint8_t> csum = guest_frame(2, 100, 12, virtio::NetHeader::kFlagNeedsCsum);
    // The GSO type byte alone in the second piece still counts.
    std::vector<uint8_t> udp = guest_frame(3, 100, 12, 0, virtio::NetHeader::kGsoUdpL4);
    iovec g = whole(gso);
    iovec c = whole(csum);
    std::array<iovec, 2> u{{{udp.data(), 1}, {udp.data() + 1, udp.size() - 1}}};
    EXPECT_EQ(batch_.add_frame({&g, 1}, 12, 0), VxlanFrameVerdict::needs_offload);
    EXPECT_EQ(batch_.add_frame({&c, 1}, 12, 0), VxlanFrameVerdict::needs_offload);
    EXPECT_EQ(batch_.add_frame(u, 12, 0), VxlanFrameVerdict::needs_offload);
    EXPECT_EQ(batch_.frames_planned(), 0);
    EXPECT_EQ(batch_.messages_planned(), 0);
}

TEST_F(VxlanSendBatchTest, drops_frames_too_short_too_big_or_to_no_vtep_counting_each) {
    std::vector<uint8_t> header_only(12, 0);
    std::vector<uint8_t> short_frame = guest_frame(1, 13);
    std::vector<uint8_t> big = guest_frame(2, kVxlanMaxInnerFrame + 1);
    std::vector<uint8_t> largest = guest_frame(3, kVxlanMaxInnerFrame);
    std::vector<uint8_t> ok = guest_frame(4, 14);
    iovec h = whole(header_only);
    iovec s = whole(short_frame);
    iovec b = whole(big);
    iovec l = whole(largest);
    iovec o = whole(ok);
    EXPECT_EQ(batch_.add_frame({&h, 1}, 12, 0), VxlanFrameVerdict::dropped_too_short);
    EXPECT_EQ(batch_.add_frame({&s, 1}, 12, 0), VxlanFrameVerdict::dropped_too_short);
    EXPECT_EQ(batch_.add_frame({&b, 1}, 12, 0), VxlanFrameVerdict::dropped_too_big);
    EXPECT_EQ(batch_.add_frame({&o, 1}, 12, 2), VxlanFrameVerdict::dropped_no_vtep);
    EXPECT_EQ(batch_.add_frame({&l, 1}, 12, 0), VxlanFrameVerdict::planned);
    EXPECT_EQ(batch_.add_frame({&o, 1}, 12, 0), VxlanFrameVerdict::planned);
    EXPECT_EQ(batch_.counters().dropped_too_short.get(), 2u);
    EXPECT_EQ(batch_.counters().dropped_too_big.get(), 1u);
    EXPECT_EQ(batch_.counters().dropped_no_vtep.get(), 1u);
    // The largest frame fills its message: the next one starts another.
    EXPECT_EQ(batch_.messages_planned(), 2);
}

TEST_F(VxlanSendBatchTest, a_frame_with_more_iovecs_than_are_left_waits_for_the_next_batch) {
    // The iovec pool (kMaxBurstIovecs) runs out before the 64 frames when
    // frames come in many pieces: 3 frames of a header + 300 one-byte pieces.
    std::vector<uint8_t> bytes = guest_frame(1, 300);
    std::vector<iovec> pieces;
    pieces.push_back(iovec{bytes.data(), 12});
    for (size_t i = 12; i < bytes.size(); ++i) {
        pieces.push_back(iovec{bytes.data() + i, 1});
    }
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(batch_.add_frame(pieces, 12, 0), VxlanFrameVerdict::planned);
    }
    // 3 * 301 iovecs used, 121 left.
    EXPECT_EQ(batch_.add_frame(pieces, 12, 0), VxlanFrameVerdict::batch_full);
    std::vector<iovec> too_many(packet::kMaxBurstIovecs, iovec{bytes.data() + 12, 1});
    too_many.insert(too_many.begin(), iovec{bytes.data(), 12});
    EXPECT_EQ(batch_.add_frame(too_many, 12, 0), VxlanFrameVerdict::dropped_bad_chunks);
    EXPECT_EQ(batch_.frames_planned(), 3);
}

TEST_F(VxlanSendBatchTest, a_send_error_drops_the_messages_frames_counted_by_reason) {
    storage_.reserve(4);
    ASSERT_EQ(add(0, 60), VxlanFrameVerdict::planned);
    ASSERT_EQ(add(1, 60), VxlanFrameVerdict::planned);
    ASSERT_EQ(add(2, 60, 1), VxlanFrameVerdict::planned);
    const VxlanSendResult r = batch_.send(-1);  // EBADF, twice
    EXPECT_EQ(r.frames_done, 3);
    EXPECT_EQ(r.frames_sent, 0);
    EXPECT_FALSE(r.would_block);
    EXPECT_TRUE(batch_.sent_all());
    EXPECT_EQ(batch_.counters().dropped_send_error.get(), 3u);
    EXPECT_EQ(batch_.counters().sendmmsg_calls.get(), 2u);
}

TEST_F(VxlanSendBatchTest, begin_forgets_the_previous_plan) {
    storage_.reserve(4);
    ASSERT_EQ(add(0, 60), VxlanFrameVerdict::planned);
    batch_.begin(vteps_);
    EXPECT_EQ(batch_.frames_planned(), 0);
    EXPECT_EQ(batch_.messages_planned(), 0);
    ASSERT_EQ(add(1, 60), VxlanFrameVerdict::planned);
    EXPECT_EQ(batch_.message(0).msg_iovlen, 2u);
}

}  // namespace
}  // namespace vnet::ports
