// PacketVerifier on the segments of a vnet-pktgen GSO frame that the back
// end cut for a receiver without TSO: the first is the stamped frame, the
// others are recognised by their TCP sequence number and checked against the
// pattern at their offset, and every TCP checksum is checked (in full, or
// as the partial sum with NEEDS_CSUM).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "frontend/packet_builder.hpp"
#include "frontend/packet_verifier.hpp"
#include "packet/byte_order.hpp"
#include "virtio/net/offload_adaptation.hpp"

namespace vnet::frontend {
namespace {

// Collects the receiver's packets, each in one contiguous buffer.
struct Collect {
    std::vector<std::vector<std::byte>> packets;
    std::vector<std::byte> current;
    iovec iov{};
    bool next_buffer(uint32_t max_packet, std::span<const iovec>* out) {
        current.assign(max_packet, std::byte{0});
        iov = {current.data(), current.size()};
        *out = {&iov, 1};
        return true;
    }
    void commit_buffer(uint32_t len) {
        packets.emplace_back(current.begin(), current.begin() + len);
    }
};

// Frame `seq` of `len` bytes as vnet-pktgen --gso sends it, cut by the
// adaptation for a receiver with (partial) or without GUEST_CSUM.
std::vector<std::vector<std::byte>> segments_of(uint64_t seq, uint32_t len, bool guest_csum) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::tcp_gso, 1448);
    std::vector<std::byte> slot(PacketBuilder::kNetHeaderLen + len);
    b.prepare_slot(slot);
    const uint32_t n = b.stamp(slot, seq, len);
    iovec packet{slot.data(), n};
    virtio::OffloadAdaptation a;
    virtio::FeatureSet f{virtio::Feature::version_1, virtio::Feature::net_mrg_rxbuf};
    if (guest_csum) {
        f = f.with(virtio::Feature::net_guest_csum);
    }
    a.set_receiver(virtio::receiver_offloads(f));
    a.plan({&packet, 1}, n, PacketBuilder::kNetHeaderLen);
    Collect rx;
    EXPECT_TRUE(virtio::deliver_adapted(a, rx, {&packet, 1}, 0).finished);
    return rx.packets;
}

std::span<const std::byte> frame_of(const std::vector<std::byte>& p) {
    return std::span<const std::byte>(p).subspan(PacketBuilder::kNetHeaderLen);
}

TEST(PacketVerifierSegments, every_segment_of_a_cut_gso_frame_verifies) {
    for (bool partial : {false, true}) {
        PacketVerifier v;
        for (uint64_t seq = 0; seq < 3; ++seq) {
            const auto segs = segments_of(seq, 16384, partial);
            ASSERT_EQ(segs.size(), 12u);  // 16330 payload bytes in 1448-byte segments
            for (size_t i = 0; i < segs.size(); ++i) {
                const FrameCheck c = v.check(frame_of(segs[i]), partial);
                EXPECT_EQ(c.verdict, FrameVerdict::ok) << partial << " " << seq << " " << i;
                EXPECT_EQ(c.continuation, i != 0);
                if (i == 0) {
                    EXPECT_EQ(c.seq, seq);
                }
            }
        }
    }
}

TEST(PacketVerifierSegments, a_flipped_byte_in_a_later_segment_is_bad_payload) {
    PacketVerifier v;
    auto segs = segments_of(0, 8000, true);
    ASSERT_EQ(v.check(frame_of(segs[0]), true).verdict, FrameVerdict::ok);
    segs[2][PacketBuilder::kNetHeaderLen + kTcpPayloadOffset + 100] ^= std::byte{1};
    EXPECT_EQ(v.check(frame_of(segs[2]), true).verdict, FrameVerdict::bad_payload);
}

TEST(PacketVerifierSegments, a_wrong_tcp_checksum_is_bad_l4_checksum) {
    PacketVerifier v;
    auto segs = segments_of(0, 8000, false);
    segs[1][PacketBuilder::kNetHeaderLen + kL4Offset + kTcpCheckOffset] ^= std::byte{0x40};
    EXPECT_EQ(v.check(frame_of(segs[0])).verdict, FrameVerdict::ok);
    EXPECT_EQ(v.check(frame_of(segs[1])).verdict, FrameVerdict::bad_l4_checksum);
    // A full checksum where a partial one was announced is wrong too.
    EXPECT_EQ(v.check(frame_of(segs[2]), true).verdict, FrameVerdict::bad_l4_checksum);
}

TEST(PacketVerifierSegments, an_unstamped_tcp_frame_before_any_stamped_one_is_foreign) {
    PacketVerifier v;
    const auto segs = segments_of(0, 8000, false);
    EXPECT_EQ(v.check(frame_of(segs[1])).verdict, FrameVerdict::foreign);
}

}  // namespace
}  // namespace vnet::frontend
