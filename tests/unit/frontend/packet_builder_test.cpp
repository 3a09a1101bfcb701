#include "frontend/packet_builder.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "frontend/frame_format.hpp"
#include "frontend/packet_verifier.hpp"
#include "packet/byte_order.hpp"
#include "packet/internet_checksum.hpp"
#include "virtio/net_header.hpp"

namespace vnet::frontend {
namespace {

using namespace packet;  // byte order and the checksum the checks use
using virtio::NetHeader;
constexpr size_t kHdr = PacketBuilder::kNetHeaderLen;

FramePiece piece(std::span<const std::byte> bytes) {
    return iovec{const_cast<std::byte*>(bytes.data()), bytes.size()};
}

struct Slot {
    Slot(const PacketBuilder& b, size_t frame_capacity) : bytes(kHdr + frame_capacity) {
        b.prepare_slot(bytes);
    }
    std::span<const std::byte> frame(uint32_t len) const { return {bytes.data() + kHdr, len}; }
    std::byte* frame_data() { return bytes.data() + kHdr; }
    NetHeader header() const {
        NetHeader h;
        std::memcpy(&h, bytes.data(), sizeof h);
        return h;
    }
    std::vector<std::byte> bytes;
};

TEST(PacketBuilder, udp_frames_of_every_size_round_trip_through_the_verifier) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, kMaxUdpFrameLen);
    uint64_t seq = 0;
    for (uint32_t len : {60u, 64u, 65u, 128u, 1500u, 1514u, 9000u, kMaxUdpFrameLen}) {
        EXPECT_EQ(b.stamp(slot.bytes, seq, len), kHdr + len);
        const FrameCheck c = v.check(slot.frame(len));
        EXPECT_EQ(c.verdict, FrameVerdict::ok) << "len " << len << ": " << to_string(c.verdict);
        EXPECT_EQ(c.seq, seq);
        ++seq;
    }
}

TEST(PacketBuilder, udp_frames_carry_addresses_ports_and_a_valid_ip_checksum) {
    FlowAddresses flow;
    flow.src_mac = {0x02, 0, 0, 0, 0, 0xaa};
    flow.dst_mac = {0x02, 0, 0, 0, 0, 0xbb};
    const PacketBuilder b(flow, FrameKind::udp);
    Slot slot(b, 256);
    b.stamp(slot.bytes, 5, 100);
    const std::byte* f = slot.frame_data();
    EXPECT_EQ(std::memcmp(f, flow.dst_mac.data(), 6), 0);
    EXPECT_EQ(std::memcmp(f + 6, flow.src_mac.data(), 6), 0);
    EXPECT_EQ(load_be16(f + 12), kEtherTypeIpv4);
    EXPECT_EQ(load_be16(f + kIpOffset + 2), 100 - kEthHeaderLen);
    EXPECT_EQ(checksum_fold(checksum_add(0, f + kIpOffset, kIpv4HeaderLen)), 0xffff);
    EXPECT_EQ(load_be16(f + kL4Offset), 9);
    EXPECT_EQ(load_be16(f + kL4Offset + 4), 100 - kL4Offset);
    const NetHeader h = slot.header();
    EXPECT_EQ(h.flags, 0);
    EXPECT_EQ(h.gso_type, NetHeader::kGsoNone);
}

TEST(PacketBuilder, restamping_a_slot_with_another_size_leaves_a_valid_frame) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, 2048);
    b.stamp(slot.bytes, 1, 1500);
    b.stamp(slot.bytes, 2, 70);
    const FrameCheck c = v.check(slot.frame(70));
    EXPECT_EQ(c.verdict, FrameVerdict::ok);
    EXPECT_EQ(c.seq, 2u);
}

TEST(PacketBuilder, gso_frames_ask_for_tcpv4_segmentation_and_a_partial_checksum) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::tcp_gso, 1448);
    Slot slot(b, 65535);
    b.stamp(slot.bytes, 0, 32768);
    const NetHeader h = slot.header();
    EXPECT_EQ(h.flags, NetHeader::kFlagNeedsCsum);
    EXPECT_EQ(h.gso_type, NetHeader::kGsoTcpV4);
    EXPECT_EQ(h.gso_size, 1448);
    EXPECT_EQ(h.hdr_len, kTcpPayloadOffset);
    EXPECT_EQ(h.csum_start, kL4Offset);
    EXPECT_EQ(h.csum_offset, kTcpCheckOffset);
}

TEST(PacketBuilder, gso_frames_within_one_mss_need_no_segmentation) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::tcp_gso, 1448);
    Slot slot(b, 2048);
    b.stamp(slot.bytes, 0, 1448 + kTcpPayloadOffset);
    EXPECT_EQ(slot.header().gso_type, NetHeader::kGsoNone);
    EXPECT_EQ(slot.header().gso_size, 0);
    EXPECT_EQ(slot.header().flags, NetHeader::kFlagNeedsCsum);
}

TEST(PacketBuilder, gso_checksum_completed_as_a_device_would_is_valid) {
    const FlowAddresses flow;
    const PacketBuilder b(flow, FrameKind::tcp_gso);
    Slot slot(b, 8192);
    const uint32_t len = 5000;
    b.stamp(slot.bytes, 3, len);
    std::byte* f = slot.frame_data();
    const NetHeader h = slot.header();
    // The device: checksum from csum_start to the end, seeded by the field.
    const uint16_t csum = checksum_finish(checksum_add(0, f + h.csum_start, len - h.csum_start));
    store_be16(f + h.csum_start + h.csum_offset, csum);
    // The receiver: pseudo header + segment must sum to 0xffff.
    std::byte pseudo[12] = {};
    store_be32(pseudo, flow.src_ip);
    store_be32(pseudo + 4, flow.dst_ip);
    pseudo[9] = std::byte{kIpProtoTcp};
    store_be16(pseudo + 10, static_cast<uint16_t>(len - kL4Offset));
    const uint32_t sum = checksum_add(checksum_add(0, pseudo, 12), f + kL4Offset, len - kL4Offset);
    EXPECT_EQ(checksum_fold(sum), 0xffff);
    PacketVerifier v;
    EXPECT_EQ(v.check(slot.frame(len)).verdict, FrameVerdict::ok);
}

TEST(PacketVerifier, a_flipped_payload_byte_is_bad_payload) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, 2048);
    b.stamp(slot.bytes, 9, 1000);
    slot.frame_data()[999] ^= std::byte{1};
    const FrameCheck c = v.check(slot.frame(1000));
    EXPECT_EQ(c.verdict, FrameVerdict::bad_payload);
    EXPECT_EQ(c.seq, 9u);
}

TEST(PacketVerifier, a_truncated_frame_is_bad_length) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, 2048);
    b.stamp(slot.bytes, 0, 1000);
    EXPECT_EQ(v.check(slot.frame(999)).verdict, FrameVerdict::bad_length);
}

TEST(PacketVerifier, a_corrupt_ip_header_is_bad_ip_checksum) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, 2048);
    b.stamp(slot.bytes, 0, 100);
    slot.frame_data()[kIpOffset + 8] = std::byte{1};  // TTL
    EXPECT_EQ(v.check(slot.frame(100)).verdict, FrameVerdict::bad_ip_checksum);
}

TEST(PacketVerifier, frames_without_our_stamp_are_foreign_not_bad) {
    PacketVerifier v;
    // Like testpmd txonly: IPv4/UDP with a zero payload.
    std::vector<std::byte> frame(64);
    store_be16(frame.data() + 12, kEtherTypeIpv4);
    frame[kIpOffset] = std::byte{0x45};
    frame[kIpOffset + 9] = std::byte{kIpProtoUdp};
    EXPECT_EQ(v.check(frame).verdict, FrameVerdict::foreign);
    EXPECT_EQ(v.check(std::span(frame).first(20)).verdict, FrameVerdict::foreign);
    store_be16(frame.data() + 12, 0x0806);  // ARP
    EXPECT_EQ(v.check(frame).verdict, FrameVerdict::foreign);
}

TEST(PacketVerifier, a_frame_split_into_pieces_anywhere_verifies_like_a_whole_one) {
    const PacketBuilder b(FlowAddresses{}, FrameKind::udp);
    PacketVerifier v;
    Slot slot(b, 4096);
    const uint32_t len = 3000;
    b.stamp(slot.bytes, 77, len);
    const std::span<const std::byte> whole = slot.frame(len);
    for (size_t cut : {1u, 13u, 42u, 50u, 58u, 59u, 2036u, 2999u}) {
        const std::array<FramePiece, 2> pieces{piece(whole.first(cut)), piece(whole.subspan(cut))};
        const FrameCheck c = v.check(pieces);
        EXPECT_EQ(c.verdict, FrameVerdict::ok) << "cut at " << cut;
        EXPECT_EQ(c.seq, 77u);
    }
    std::vector<std::byte> copy(whole.begin(), whole.end());
    copy[2500] ^= std::byte{0x80};
    const std::span<const std::byte> bad(copy);
    const std::array<FramePiece, 3> pieces{piece(bad.first(2036)), piece(bad.subspan(2036, 400)),
                                           piece(bad.subspan(2436))};
    EXPECT_EQ(v.check(pieces).verdict, FrameVerdict::bad_payload);
}

TEST(SequenceTracker, counts_gaps_as_missing_and_late_arrivals_as_reordered) {
    SequenceTracker t;
    for (uint64_t s : {0u, 1u, 2u, 5u, 6u}) {
        t.record(s);
    }
    EXPECT_EQ(t.missing(), 2u);
    EXPECT_EQ(t.reordered(), 0u);
    t.record(3);
    EXPECT_EQ(t.missing(), 1u);
    EXPECT_EQ(t.reordered(), 1u);
    EXPECT_EQ(t.next_expected(), 7u);
}

TEST(SequenceTracker, a_stream_that_starts_late_counts_the_start_as_missing) {
    SequenceTracker t;
    t.record(10);
    EXPECT_EQ(t.missing(), 10u);
}

}  // namespace
}  // namespace vnet::frontend
