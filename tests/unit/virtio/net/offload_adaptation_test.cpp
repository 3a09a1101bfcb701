// OffloadAdaptation as a specification: what a guest's RX ring gets from
// another guest's TX packet for each combination of the sender's header and
// the receiver's negotiated offloads, byte for byte, and what a hostile
// sender's header costs (a drop with its named reason, nothing written).
#include "virtio/net/offload_adaptation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "unit/virtio/net/offload_frames.hpp"

namespace vnet::virtio::test {
namespace {

using packet::DropReason;

// The receiving guest's RX ring: buffers of `buffer_bytes` split into
// `piece`-byte iovecs (odd, so headers and checksummed ranges straddle
// pieces), at most `budget` packets before it runs dry.
struct FakeRx {
    size_t buffer_bytes = 70000;
    size_t piece = 7;
    size_t budget = 100000;
    std::vector<std::vector<uint8_t>> packets;
    std::vector<uint8_t> current;
    std::vector<iovec> iovs;

    bool next_buffer(uint32_t /*max_packet*/, std::span<const iovec>* out) {
        if (packets.size() >= budget) {
            return false;
        }
        current.assign(buffer_bytes, 0xee);
        iovs.clear();
        for (size_t at = 0; at < buffer_bytes; at += piece) {
            iovs.push_back({current.data() + at, std::min(piece, buffer_bytes - at)});
        }
        *out = iovs;
        return true;
    }
    void commit_buffer(uint32_t len) {
        packets.emplace_back(current.begin(), current.begin() + len);
    }
};

// The sender's packet as a guest might chain it: `piece`-byte iovecs.
struct SenderPacket {
    SenderPacket(std::vector<uint8_t> b, size_t piece = 5) : bytes(std::move(b)) {
        for (size_t at = 0; at < bytes.size(); at += piece) {
            iovs.push_back({bytes.data() + at, std::min(piece, bytes.size() - at)});
        }
    }
    std::vector<uint8_t> bytes;
    std::vector<iovec> iovs;
};

ReceiverOffloads receiver(FeatureSet extra, bool mergeable = true) {
    FeatureSet f{Feature::version_1};
    if (mergeable) {
        f = f.with(Feature::net_mrg_rxbuf);
    }
    return receiver_offloads(f | extra);
}
const FeatureSet kNoOffloads{};
const FeatureSet kCsum{Feature::net_guest_csum};
const FeatureSet kTso4{Feature::net_guest_csum, Feature::net_guest_tso4};

SenderHeader tso_header(const Frame& f, uint16_t gso_size = 1448) {
    SenderHeader h;
    h.flags = NetHeader::kFlagNeedsCsum;
    h.gso_type =
        f.udp ? NetHeader::kGsoUdpL4 : (f.ipv6 ? NetHeader::kGsoTcpV6 : NetHeader::kGsoTcpV4);
    h.hdr_len = static_cast<uint16_t>(f.payload_at);
    h.gso_size = gso_size;
    h.csum_start = static_cast<uint16_t>(f.l4);
    h.csum_offset = f.udp ? 6 : 16;
    return h;
}

struct Delivered {
    AdaptedDelivery result;
    FakeRx rx;
};

Delivered deliver(const ReceiverOffloads& r, const std::vector<uint8_t>& packet,
                  size_t sender_header = 12, FakeRx rx = {}) {
    OffloadAdaptation a;
    a.set_receiver(r);
    SenderPacket p(packet);
    a.plan(p.iovs, static_cast<uint32_t>(p.bytes.size()), static_cast<uint32_t>(sender_header));
    Delivered d{deliver_adapted(a, rx, p.iovs, 0), std::move(rx)};
    return d;
}

std::vector<uint8_t> frame_of(const std::vector<uint8_t>& packet, size_t header) {
    return {packet.begin() + static_cast<std::ptrdiff_t>(header), packet.end()};
}

// ---- whole frames ---------------------------------------------------------------

TEST(OffloadAdaptation, gso_frame_goes_whole_to_a_tso4_receiver_with_mergeable_buffers) {
    Frame f = make_frame({});
    make_partial(f);
    SenderHeader h = tso_header(f);
    h.hdr_len = 20;  // a hint: the receiver gets the real header length
    const auto packet = sender_packet(h, f);
    Delivered d = deliver(receiver(kTso4), packet);
    ASSERT_TRUE(d.result.finished);
    ASSERT_FALSE(d.result.dropped);
    ASSERT_EQ(d.rx.packets.size(), 1u);
    const auto& got = d.rx.packets[0];
    const std::vector<uint8_t> header{
        NetHeader::kFlagNeedsCsum, NetHeader::kGsoTcpV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0, 1, 0};
    EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 12), header);
    EXPECT_EQ(frame_of(got, 12), f.bytes);
}

// A 64 KB frame whole, in the pieces a guest really uses (4 KiB TX pieces,
// 2 KiB mergeable RX buffers), so most runs take the streaming stores: the
// same bytes with them and without (`streaming_stores off`), through both
// copies (same header size, and 10 -> 12 bytes).
TEST(OffloadAdaptation, a_64k_frame_goes_whole_the_same_with_streaming_stores_or_without) {
    Frame f = make_frame({.payload = 64000});
    make_partial(f);
    for (const size_t sender_header : {size_t{12}, size_t{10}}) {
        const auto packet = sender_packet(tso_header(f), f, sender_header);
        std::vector<std::vector<uint8_t>> got;
        for (const bool streaming : {true, false}) {
            OffloadAdaptation a;
            a.set_receiver(receiver(kTso4));
            a.set_streaming_stores(streaming);
            const SenderPacket p(packet, 4096);
            a.plan(p.iovs, static_cast<uint32_t>(p.bytes.size()),
                   static_cast<uint32_t>(sender_header));
            FakeRx rx;
            rx.piece = 2048;
            ASSERT_TRUE(deliver_adapted(a, rx, p.iovs, 0).finished);
            ASSERT_EQ(rx.packets.size(), 1u);
            EXPECT_EQ(frame_of(rx.packets[0], 12), f.bytes) << "streaming " << streaming;
            got.push_back(rx.packets[0]);
        }
        EXPECT_EQ(got[0], got[1]) << "sender header " << sender_header;
    }
}

TEST(OffloadAdaptation, whole_frame_header_is_translated_from_10_to_12_bytes_and_back) {
    Frame f = make_frame({.payload = 100});
    const auto packet10 = sender_packet({}, f, 10);
    Delivered to12 = deliver(receiver(kNoOffloads), packet10, 10);
    ASSERT_EQ(to12.rx.packets.size(), 1u);
    EXPECT_EQ(to12.rx.packets[0].size(), 12 + f.bytes.size());
    EXPECT_EQ(std::vector<uint8_t>(to12.rx.packets[0].begin(), to12.rx.packets[0].begin() + 12),
              std::vector<uint8_t>({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}));
    EXPECT_EQ(frame_of(to12.rx.packets[0], 12), f.bytes);

    const auto packet12 = sender_packet({}, f, 12);
    Delivered to10 = deliver(receiver_offloads(FeatureSet{}), packet12, 12);  // legacy
    ASSERT_EQ(to10.rx.packets.size(), 1u);
    EXPECT_EQ(to10.rx.packets[0].size(), 10 + f.bytes.size());
    EXPECT_EQ(frame_of(to10.rx.packets[0], 10), f.bytes);
}

// A buffer whose first piece holds the whole packet takes the one-pass copy
// (same header size, nothing to complete, not streamed): the same bytes as
// the piece-by-piece path, from a sender whose packet is in several pieces;
// a header that changes size or a checksum to complete still gets the
// general path's result in a one-piece buffer.
TEST(OffloadAdaptation, a_frame_that_fits_the_first_buffer_piece_gets_the_same_bytes) {
    Frame f = make_frame({.payload = 22});  // a 64-byte frame
    const auto header_12 = sender_packet({}, f, 12);
    Frame partial = make_frame({.payload = 301});
    make_partial(partial);
    const SenderHeader needs_csum{NetHeader::kFlagNeedsCsum,         0, 0, 0,
                                  static_cast<uint16_t>(partial.l4), 16};
    struct Case {
        std::vector<uint8_t> packet;
        size_t sender_header;
        ReceiverOffloads receiver;
    };
    const Case cases[] = {
        {header_12, 12, receiver(kNoOffloads)},
        {sender_packet({}, f, 10), 10, receiver(kNoOffloads)},
        {header_12, 12, receiver_offloads(FeatureSet{})},  // a 10-byte receiver
        {sender_packet(needs_csum, partial), 12, receiver(kCsum)},
        {sender_packet(needs_csum, partial), 12, receiver(kNoOffloads)},
    };
    for (const Case& c : cases) {
        for (const size_t sender_piece : {size_t{5}, size_t{26}, size_t{4096}}) {
            std::vector<std::vector<uint8_t>> got;
            for (const size_t rx_piece : {size_t{7}, size_t{70000}}) {
                OffloadAdaptation a;
                a.set_receiver(c.receiver);
                const SenderPacket p(c.packet, sender_piece);
                a.plan(p.iovs, static_cast<uint32_t>(p.bytes.size()),
                       static_cast<uint32_t>(c.sender_header));
                FakeRx rx;
                rx.piece = rx_piece;
                ASSERT_TRUE(deliver_adapted(a, rx, p.iovs, 0).finished);
                ASSERT_EQ(rx.packets.size(), 1u);
                got.push_back(rx.packets[0]);
            }
            EXPECT_EQ(got[0], got[1])
                << "sender header " << c.sender_header << ", pieces of " << sender_piece;
        }
    }
}

// A plain frame whose header lies in its first piece is planned inline; the
// plan is the general one's for it, and every other header (a partial
// checksum, GSO, lengths that do not fit) still gets the general answer.
TEST(OffloadAdaptation, the_inline_plan_of_a_plain_frame_is_the_general_plan) {
    Frame f = make_frame({.payload = 22});
    Frame partial = make_frame({.payload = 301});
    make_partial(partial);
    Frame big = make_frame({.payload = 3000});
    std::vector<std::vector<uint8_t>> packets{
        sender_packet({}, f, 12),
        sender_packet({NetHeader::kFlagDataValid, 0, 0, 0, 0, 0}, f, 12),
        sender_packet({0, 0, 200, 0, 0, 0}, f, 12),  // hdr_len past the frame
        sender_packet({NetHeader::kFlagNeedsCsum, 0, 0, 0, static_cast<uint16_t>(partial.l4), 16},
                      partial, 12),
        sender_packet(tso_header(big), big, 12),
    };
    for (const auto& packet : packets) {
        for (const ReceiverOffloads& r :
             {receiver(kNoOffloads), receiver(kTso4), receiver_offloads(FeatureSet{})}) {
            for (const uint32_t claimed : {static_cast<uint32_t>(packet.size()),
                                           static_cast<uint32_t>(packet.size() + 1), 11u, 9u}) {
                DeliveryPlan plans[2];
                int k = 0;
                for (const size_t piece : {size_t{5}, size_t{4096}}) {  // general, inline
                    OffloadAdaptation a;
                    a.set_receiver(r);
                    const SenderPacket p(packet, piece);
                    plans[k++] = a.plan(p.iovs, claimed, 12);
                }
                EXPECT_EQ(plans[0].how, plans[1].how) << claimed;
                if (plans[0].how == Delivery::drop) {
                    EXPECT_EQ(plans[0].drop_reason, plans[1].drop_reason) << claimed;
                    continue;
                }
                EXPECT_EQ(plans[0].header, plans[1].header) << claimed;
                EXPECT_EQ(plans[0].frame_len, plans[1].frame_len);
                EXPECT_EQ(plans[0].sender_header_size, plans[1].sender_header_size);
                EXPECT_EQ(plans[0].complete_checksum, plans[1].complete_checksum);
                EXPECT_EQ(plans[0].gso, plans[1].gso);
                EXPECT_EQ(plans[0].segment_count, plans[1].segment_count);
            }
        }
    }
}

TEST(OffloadAdaptation, partial_checksum_stays_partial_for_a_guest_csum_receiver) {
    Frame f = make_frame({.payload = 300});
    make_partial(f);
    SenderHeader h{NetHeader::kFlagNeedsCsum | NetHeader::kFlagDataValid, 0, 0, 0, 34, 16};
    Delivered d = deliver(receiver(kCsum), sender_packet(h, f));
    ASSERT_EQ(d.rx.packets.size(), 1u);
    const auto& got = d.rx.packets[0];
    // DATA_VALID from a TX header is not passed on (virtio 1.2 §5.1.6.2).
    EXPECT_EQ(got[0], NetHeader::kFlagNeedsCsum);
    EXPECT_EQ(le16_at(got, 6), 34);
    EXPECT_EQ(le16_at(got, 8), 16);
    EXPECT_EQ(frame_of(got, 12), f.bytes);
}

TEST(OffloadAdaptation, partial_checksum_is_completed_for_a_receiver_without_guest_csum) {
    for (bool ipv6 : {false, true}) {
        for (bool udp : {false, true}) {
            Frame f = make_frame({.ipv6 = ipv6, .udp = udp, .payload = 301});  // odd length
            make_partial(f);
            SenderHeader h{NetHeader::kFlagNeedsCsum,          0, 0, 0, static_cast<uint16_t>(f.l4),
                           static_cast<uint16_t>(udp ? 6 : 16)};
            Delivered d = deliver(receiver(kNoOffloads), sender_packet(h, f));
            ASSERT_EQ(d.rx.packets.size(), 1u);
            const auto got = frame_of(d.rx.packets[0], 12);
            EXPECT_EQ(d.rx.packets[0][0], 0) << "flags must be 0 without GUEST_CSUM";
            EXPECT_TRUE(l4_checksum_valid(got, f.l3, f.l4, ipv6, udp)) << ipv6 << udp;
            // Everything but the checksum field is the sender's.
            std::vector<uint8_t> expected = f.bytes;
            const size_t check = f.l4 + (udp ? 6 : 16);
            expected[check] = got[check];
            expected[check + 1] = got[check + 1];
            EXPECT_EQ(got, expected);
        }
    }
}

TEST(OffloadAdaptation, gso_frame_no_longer_than_one_segment_goes_as_a_plain_frame) {
    Frame f = make_frame({.payload = 1000});
    make_partial(f);
    Delivered d = deliver(receiver(kNoOffloads), sender_packet(tso_header(f), f));
    ASSERT_EQ(d.rx.packets.size(), 1u);
    const auto got = frame_of(d.rx.packets[0], 12);
    EXPECT_EQ(d.rx.packets[0][1], NetHeader::kGsoNone);
    EXPECT_TRUE(l4_checksum_valid(got, f.l3, f.l4, false, false));
}

// ---- segmentation ---------------------------------------------------------------

// Checks the segments of `f` (payload cut at gso_size) as tcp_gso_segment
// makes them: lengths, ids, seq, flags, checksums (full or partial).
void expect_tcp_segments(const Frame& f, const FrameSpec& spec, const FakeRx& rx, uint16_t gso_size,
                         bool partial, size_t rx_header = 12) {
    const size_t count = (spec.payload + gso_size - 1) / gso_size;
    ASSERT_EQ(rx.packets.size(), count);
    for (size_t i = 0; i < count; ++i) {
        const auto& pkt = rx.packets[i];
        const bool last = i + 1 == count;
        const size_t n = last ? spec.payload - i * gso_size : gso_size;
        ASSERT_EQ(pkt.size(), rx_header + f.payload_at + n) << i;
        std::vector<uint8_t> seg = frame_of(pkt, rx_header);
        // The virtio header: no GSO; partial checksum for a GUEST_CSUM receiver.
        EXPECT_EQ(pkt[0], partial ? NetHeader::kFlagNeedsCsum : 0) << i;
        EXPECT_EQ(pkt[1], NetHeader::kGsoNone);
        EXPECT_EQ(le16_at(pkt, 6), partial ? f.l4 : 0);
        EXPECT_EQ(le16_at(pkt, 8), partial ? 16 : 0);
        if (rx_header == 12) {
            EXPECT_EQ(le16_at(pkt, 10), 1);
        }
        // Ethernet and addresses as sent.
        EXPECT_TRUE(std::equal(seg.begin(), seg.begin() + static_cast<std::ptrdiff_t>(f.l3),
                               f.bytes.begin()));
        if (f.ipv6) {
            EXPECT_EQ(be16_at(seg, f.l3 + 4), 20 + n);
        } else {
            EXPECT_EQ(be16_at(seg, f.l3 + 2), 40 + n);
            EXPECT_EQ(be16_at(seg, f.l3 + 4), spec.ip_id + i);
            EXPECT_EQ(be16_at(seg, f.l3 + 6), 0x4000);
            EXPECT_EQ(naive_sum(seg, f.l3, 20), 0xffff) << "IPv4 header checksum, segment " << i;
        }
        EXPECT_EQ(be32_at(seg, f.l4 + 4), spec.seq + i * gso_size);
        EXPECT_EQ(be32_at(seg, f.l4 + 8), 0xabcdef01u);
        uint8_t flags = spec.tcp_flags;
        if (!last) {
            flags &= static_cast<uint8_t>(~0x09);  // FIN, PSH only on the last
        }
        if (i != 0) {
            flags &= static_cast<uint8_t>(~0x80);  // CWR only on the first
        }
        EXPECT_EQ(seg[f.l4 + 13], flags) << i;
        if (partial) {
            const auto l4_len = static_cast<uint32_t>(seg.size() - f.l4);
            EXPECT_EQ(be16_at(seg, f.l4 + 16), naive_pseudo_sum(seg, f.l3, f.ipv6, false, l4_len));
        } else {
            EXPECT_TRUE(l4_checksum_valid(seg, f.l3, f.l4, f.ipv6, false)) << i;
        }
        for (size_t k = 0; k < n; ++k) {
            ASSERT_EQ(seg[f.payload_at + k], payload_byte(i * gso_size + k)) << i << " " << k;
        }
    }
}

TEST(OffloadAdaptation, tcp4_gso_frame_is_segmented_for_a_receiver_without_tso) {
    const FrameSpec spec{.payload = 3000};
    Frame f = make_frame(spec);
    make_partial(f);
    Delivered d = deliver(receiver(kNoOffloads), sender_packet(tso_header(f), f));
    ASSERT_TRUE(d.result.finished);
    expect_tcp_segments(f, spec, d.rx, 1448, false);
}

TEST(OffloadAdaptation, tcp6_gso_frame_is_segmented_for_a_receiver_without_tso6) {
    const FrameSpec spec{.ipv6 = true, .payload = 4001};
    Frame f = make_frame(spec);
    make_partial(f);
    // TSO4 is no help for an IPv6 frame.
    Delivered d = deliver(receiver(kTso4), sender_packet(tso_header(f, 1000), f));
    expect_tcp_segments(f, spec, d.rx, 1000, true);
}

TEST(OffloadAdaptation, segments_keep_a_partial_checksum_for_a_guest_csum_receiver) {
    const FrameSpec spec{.payload = 3000};
    Frame f = make_frame(spec);
    make_partial(f);
    Delivered d = deliver(receiver(kCsum), sender_packet(tso_header(f), f));
    expect_tcp_segments(f, spec, d.rx, 1448, true);
}

TEST(OffloadAdaptation, segments_of_a_vlan_tagged_frame_into_a_legacy_10_byte_header) {
    const FrameSpec spec{.vlan = true, .payload = 2900};
    Frame f = make_frame(spec);
    make_partial(f);
    FakeRx rx;
    Delivered d = deliver(receiver_offloads(FeatureSet{}), sender_packet(tso_header(f), f), 12, rx);
    expect_tcp_segments(f, spec, d.rx, 1448, false, 10);
}

TEST(OffloadAdaptation, ecn_gso_frame_is_segmented_for_a_tso_receiver_without_guest_ecn) {
    const FrameSpec spec{.payload = 3000};
    Frame f = make_frame(spec);
    make_partial(f);
    SenderHeader h = tso_header(f);
    h.gso_type |= NetHeader::kGsoEcn;
    Delivered d = deliver(receiver(kTso4), sender_packet(h, f));
    expect_tcp_segments(f, spec, d.rx, 1448, true);

    Delivered whole = deliver(receiver(kTso4.with(Feature::net_guest_ecn)), sender_packet(h, f));
    ASSERT_EQ(whole.rx.packets.size(), 1u);
    EXPECT_EQ(whole.rx.packets[0][1], NetHeader::kGsoTcpV4 | NetHeader::kGsoEcn);
}

TEST(OffloadAdaptation, tso_receiver_without_mergeable_buffers_gets_segments_in_small_buffers) {
    const FrameSpec spec{.payload = 3000};
    Frame f = make_frame(spec);
    make_partial(f);
    FakeRx small;
    small.buffer_bytes = 1526;
    Delivered d = deliver(receiver(kTso4, false), sender_packet(tso_header(f), f), 12, small);
    // The whole frame did not fit the guest's buffer: segmented instead (the
    // receiver takes partial checksums).
    ASSERT_TRUE(d.result.finished);
    ASSERT_EQ(d.rx.packets.size(), 3u);
    expect_tcp_segments(f, spec, d.rx, 1448, true);

    Delivered big = deliver(receiver(kTso4, false), sender_packet(tso_header(f), f));
    ASSERT_EQ(big.rx.packets.size(), 1u);  // 64 KiB buffers: whole
}

TEST(OffloadAdaptation, a_frame_cut_short_by_the_ring_resumes_at_the_next_segment) {
    const FrameSpec spec{.payload = 5000};
    Frame f = make_frame(spec);
    make_partial(f);
    SenderPacket p(sender_packet(tso_header(f), f));
    OffloadAdaptation a;
    a.set_receiver(receiver(kNoOffloads));
    FakeRx rx;
    rx.budget = 2;
    a.plan(p.iovs, static_cast<uint32_t>(p.bytes.size()), 12);
    AdaptedDelivery first = deliver_adapted(a, rx, p.iovs, 0);
    EXPECT_FALSE(first.finished);
    EXPECT_EQ(first.next_segment, 2);
    ASSERT_EQ(rx.packets.size(), 2u);
    rx.budget = 100;
    a.plan(p.iovs, static_cast<uint32_t>(p.bytes.size()), 12);
    AdaptedDelivery rest = deliver_adapted(a, rx, p.iovs, first.next_segment);
    EXPECT_TRUE(rest.finished);
    expect_tcp_segments(f, spec, rx, 1448, false);
}

TEST(OffloadAdaptation, uso_frame_is_cut_into_datagrams_each_with_its_length_and_checksum) {
    for (bool ipv6 : {false, true}) {
        const FrameSpec spec{.ipv6 = ipv6, .udp = true, .payload = 2500};
        Frame f = make_frame(spec);
        make_partial(f);
        Delivered d = deliver(receiver(kNoOffloads), sender_packet(tso_header(f, 1000), f));
        ASSERT_EQ(d.rx.packets.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
            const size_t n = i == 2 ? 500 : 1000;
            const auto seg = frame_of(d.rx.packets[i], 12);
            ASSERT_EQ(seg.size(), f.payload_at + n);
            EXPECT_EQ(be16_at(seg, f.l4 + 4), 8 + n);
            EXPECT_TRUE(l4_checksum_valid(seg, f.l3, f.l4, ipv6, true)) << ipv6 << i;
            if (!ipv6) {
                EXPECT_EQ(be16_at(seg, f.l3 + 2), 28 + n);
                EXPECT_EQ(be16_at(seg, f.l3 + 4), spec.ip_id + i);
                EXPECT_EQ(naive_sum(seg, f.l3, 20), 0xffff);
            } else {
                EXPECT_EQ(be16_at(seg, f.l3 + 4), 8 + n);
            }
            for (size_t k = 0; k < n; ++k) {
                ASSERT_EQ(seg[f.payload_at + k], payload_byte(i * 1000 + k));
            }
        }
        const FeatureSet uso{Feature::net_guest_csum,
                             ipv6 ? Feature::net_guest_uso6 : Feature::net_guest_uso4};
        Delivered whole = deliver(receiver(uso), sender_packet(tso_header(f, 1000), f));
        ASSERT_EQ(whole.rx.packets.size(), 1u);
        EXPECT_EQ(whole.rx.packets[0][1], NetHeader::kGsoUdpL4);
    }
}

TEST(OffloadAdaptation, ufo_frame_becomes_ipv4_fragments_of_one_checksummed_datagram) {
    const FrameSpec spec{.udp = true, .payload = 2500};
    Frame f = make_frame(spec);
    make_partial(f);
    SenderHeader h = tso_header(f, 1480);
    h.gso_type = NetHeader::kGsoUdp;
    Delivered d = deliver(receiver(kCsum), sender_packet(h, f));
    // 2508 L4 bytes in 1480-byte fragments: 1480 + 1028.
    ASSERT_EQ(d.rx.packets.size(), 2u);
    std::vector<uint8_t> datagram;
    for (size_t i = 0; i < 2; ++i) {
        const auto& pkt = d.rx.packets[i];
        EXPECT_EQ(pkt[0], NetHeader::kFlagDataValid);  // as tun reports CHECKSUM_UNNECESSARY
        const auto frag = frame_of(pkt, 12);
        const size_t n = i == 0 ? 1480 : 1028;
        ASSERT_EQ(frag.size(), f.l4 + n);
        EXPECT_EQ(be16_at(frag, f.l3 + 2), 20 + n);
        EXPECT_EQ(be16_at(frag, f.l3 + 6), 0x4000 | (i == 0 ? 0x2000 : 0) | (i * 1480 / 8));
        EXPECT_EQ(naive_sum(frag, f.l3, 20), 0xffff);
        datagram.insert(datagram.end(), frag.begin() + static_cast<std::ptrdiff_t>(f.l4),
                        frag.end());
    }
    // Reassembled: one UDP datagram with a full, valid checksum.
    std::vector<uint8_t> whole(f.bytes.begin(),
                               f.bytes.begin() + static_cast<std::ptrdiff_t>(f.l4));
    whole.insert(whole.end(), datagram.begin(), datagram.end());
    EXPECT_EQ(be16_at(whole, f.l4 + 4), 2508);
    EXPECT_TRUE(l4_checksum_valid(whole, f.l3, f.l4, false, true));

    Delivered plain = deliver(receiver(kNoOffloads), sender_packet(h, f));
    ASSERT_EQ(plain.rx.packets.size(), 2u);
    EXPECT_EQ(plain.rx.packets[0][0], 0);  // flags 0 without GUEST_CSUM
}

// ---- hostile senders ------------------------------------------------------------

struct Hostile {
    const char* what;
    void (*edit)(SenderHeader&, Frame&);
    DropReason reason;
};

TEST(OffloadAdaptation, a_header_that_does_not_fit_its_frame_is_a_counted_drop) {
    const Hostile cases[] = {
        {"csum_start past the frame", [](SenderHeader& h, Frame&) { h.csum_start = 60000; },
         DropReason::bad_checksum_offsets},
        {"csum_offset past the frame", [](SenderHeader& h, Frame&) { h.csum_offset = 65535; },
         DropReason::bad_checksum_offsets},
        {"TCP GSO checksum not at the TCP check field",
         [](SenderHeader& h, Frame&) { h.csum_offset = 6; }, DropReason::bad_checksum_offsets},
        {"TCP GSO checksum not from the TCP header",
         [](SenderHeader& h, Frame&) { h.csum_start = 14; }, DropReason::bad_checksum_offsets},
        {"gso_size 0", [](SenderHeader& h, Frame&) { h.gso_size = 0; }, DropReason::bad_gso_header},
        {"hdr_len past the frame", [](SenderHeader& h, Frame&) { h.hdr_len = 60000; },
         DropReason::bad_gso_header},
        {"unknown gso_type", [](SenderHeader& h, Frame&) { h.gso_type = 2; },
         DropReason::bad_gso_header},
        {"ECN bit alone", [](SenderHeader& h, Frame&) { h.gso_type = NetHeader::kGsoEcn; },
         DropReason::bad_gso_header},
        {"TCPV6 on an IPv4 frame",
         [](SenderHeader& h, Frame&) { h.gso_type = NetHeader::kGsoTcpV6; },
         DropReason::bad_gso_header},
        {"UDP_L4 on a TCP frame",
         [](SenderHeader& h, Frame&) { h.gso_type = NetHeader::kGsoUdpL4; },
         DropReason::bad_gso_header},
        {"not IP", [](SenderHeader&, Frame& f) { put_be16(f.bytes, 12, 0x0806); },
         DropReason::bad_gso_header},
        {"IPv4 header length below 20", [](SenderHeader&, Frame& f) { f.bytes[14] = 0x44; },
         DropReason::bad_gso_header},
        {"an IPv4 fragment", [](SenderHeader&, Frame& f) { put_be16(f.bytes, 20, 0x2000); },
         DropReason::bad_gso_header},
        {"TCP data offset below 5", [](SenderHeader&, Frame& f) { f.bytes[46] = 0x40; },
         DropReason::bad_gso_header},
        {"TCP header past the frame's headers", [](SenderHeader&, Frame& f) { f.bytes.resize(40); },
         DropReason::bad_gso_header},
        {"too many segments", [](SenderHeader& h, Frame&) { h.gso_size = 1; },
         DropReason::bad_gso_header},
    };
    for (const Hostile& c : cases) {
        Frame f = make_frame({.payload = 3000});
        SenderHeader h = tso_header(f);
        c.edit(h, f);
        Delivered d = deliver(receiver(kNoOffloads), sender_packet(h, f));
        EXPECT_TRUE(d.result.finished) << c.what;
        EXPECT_TRUE(d.result.dropped) << c.what;
        EXPECT_EQ(d.result.drop_reason, c.reason)
            << c.what << ": " << packet::to_string(d.result.drop_reason);
        EXPECT_TRUE(d.rx.packets.empty()) << c.what;
    }
}

TEST(OffloadAdaptation, udp_gso_without_a_partial_checksum_or_past_udp_max_segments_is_dropped) {
    Frame f = make_frame({.udp = true, .payload = 3000});
    SenderHeader h = tso_header(f, 1000);
    h.flags = 0;
    EXPECT_EQ(deliver(receiver(kNoOffloads), sender_packet(h, f)).result.drop_reason,
              DropReason::bad_gso_header);
    h = tso_header(f, 20);  // 150 datagrams > UDP_MAX_SEGMENTS
    Delivered d = deliver(receiver(kNoOffloads), sender_packet(h, f));
    EXPECT_TRUE(d.result.dropped);
    EXPECT_EQ(d.result.drop_reason, DropReason::bad_gso_header);
}

TEST(OffloadAdaptation, plain_frame_with_checksum_offsets_past_its_end_is_dropped) {
    Frame f = make_frame({.payload = 10});
    SenderHeader h{
        NetHeader::kFlagNeedsCsum, 0, 0, 0, static_cast<uint16_t>(f.bytes.size() - 1), 0};
    Delivered d = deliver(receiver(kNoOffloads), sender_packet(h, f));
    EXPECT_TRUE(d.result.dropped);
    EXPECT_EQ(d.result.drop_reason, DropReason::bad_checksum_offsets);
    // The last two bytes of the frame are still a valid place.
    h.csum_start = static_cast<uint16_t>(f.bytes.size() - 2);
    EXPECT_FALSE(deliver(receiver(kNoOffloads), sender_packet(h, f)).result.dropped);
}

TEST(OffloadAdaptation, gso_frame_with_ipv6_extension_headers_is_an_unsupported_drop) {
    Frame f = make_frame({.ipv6 = true, .payload = 3000});
    f.bytes[14 + 6] = 0;  // hop-by-hop options
    // Not parsed, so not segmented, nor passed whole (its header length is
    // unknown): a drop with its own reason, whatever the receiver takes.
    for (FeatureSet r :
         {kNoOffloads, FeatureSet{Feature::net_guest_csum, Feature::net_guest_tso6}}) {
        Delivered d = deliver(receiver(r), sender_packet(tso_header(f), f));
        EXPECT_TRUE(d.result.dropped);
        EXPECT_EQ(d.result.drop_reason, DropReason::gso_unsupported);
        EXPECT_TRUE(d.rx.packets.empty());
    }
}

TEST(OffloadAdaptation, a_header_shorter_than_10_bytes_is_too_short) {
    Frame f = make_frame({.payload = 10});
    Delivered d = deliver(receiver(kNoOffloads), sender_packet({}, f), 8);
    EXPECT_EQ(d.result.drop_reason, DropReason::packet_too_short);
}

}  // namespace
}  // namespace vnet::virtio::test
