// VxlanSocketPort end to end over loopback: ports bound to 127.0.0.1,
// .2 and .3 on one UDP port, each the others' peer, hand bursts to each
// other as a switch would (transmit_burst on one, receive_burst and
// complete_burst on the other): floods, learning, unicast to one peer, GSO
// frames cut on the way, partial checksums completed, peers removed, and
// forwarding by a control plane's table instead of learning.
#include "ports/vxlan/vxlan_socket_port.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/steady_clock.hpp"
#include "common/unique_fd.hpp"
#include "packet/packet_burst.hpp"
#include "ports/setup_error.hpp"
#include "unit/gro/gso_segmenter.hpp"
#include "unit/gro/segment_factory.hpp"
#include "unit/ports/vxlan/own_netns.hpp"
#include "unit/ports/vxlan/vxlan_frames.hpp"
#include "unit/virtio/net/offload_frames.hpp"

namespace vnet::ports {
namespace {

using test::guest_frame;

// One port number per test process, so that parallel runs do not collide.
uint16_t test_port() {
    return static_cast<uint16_t>(40000 + (::getpid() % 20000));
}

VxlanSocketPortOptions options_for(const std::string& local, std::vector<std::string> peers) {
    VxlanSocketPortOptions o;
    o.vni = 100;
    o.local = local;
    o.dstport = test_port();
    o.peers = std::move(peers);
    o.socket_buffer_bytes = 1 << 20;
    // One source port: these tests count the sends and messages of a burst
    // whose frames are of many flows (vxlan_frames.hpp), which lanes would
    // part (VxlanSocketPortLanes below).
    o.source_ports = 1;
    return o;
}

// Frames as a guest's TX ring hands them over: a burst of iovecs into
// memory the test owns.
struct Sent {
    std::vector<std::vector<uint8_t>> packets;
    packet::PacketBurst burst;

    // Packet k is split into pieces at splits[k] (sorted offsets), as a
    // guest's descriptors may split it.
    std::vector<std::vector<size_t>> splits;

    void add(std::vector<uint8_t> bytes, std::vector<size_t> at = {}) {
        packets.push_back(std::move(bytes));
        splits.push_back(std::move(at));
    }
    const packet::PacketBurst& make() {
        burst.clear();
        for (size_t k = 0; k < packets.size(); ++k) {
            std::vector<uint8_t>& p = packets[k];
            std::span<iovec> room = burst.free_iovecs();
            size_t from = 0;
            uint16_t n = 0;
            for (size_t to : splits[k]) {
                room[n++] = iovec{p.data() + from, to - from};
                from = to;
            }
            room[n++] = iovec{p.data() + from, p.size() - from};
            burst.push(n, static_cast<uint32_t>(p.size()), 0);
        }
        return burst;
    }
};

// Everything `port` receives now, each packet whole: its virtio-net
// header, then its frame.
std::vector<std::vector<uint8_t>> receive_packets(VxlanSocketPort& port) {
    std::vector<std::vector<uint8_t>> out;
    packet::PacketBurst burst;
    for (;;) {
        burst.clear();
        const uint16_t n = port.receive_burst(0, burst, packet::kMaxBurstPackets);
        if (n == 0) {
            return out;
        }
        EXPECT_EQ(burst.header_size, sizeof(virtio::NetHeader));
        for (uint16_t i = 0; i < n; ++i) {
            out.push_back(test::gather(&burst.packet_iovecs(i)[0], burst.packet_iovecs(i).size()));
            EXPECT_EQ(out.back().size(), burst.packets[i].len);
        }
        port.complete_burst(0, burst, n);
    }
}

// A received packet's header says no offload: all zero, or (a TCP segment
// whose checksum was verified) DATA_VALID alone.
bool plain_header(const std::vector<uint8_t>& packet, bool verified) {
    std::vector<uint8_t> want(sizeof(virtio::NetHeader), 0);
    want[virtio::kNetHeaderFlagsOffset] = verified ? virtio::NetHeader::kFlagDataValid : 0;
    return packet.size() >= want.size() && std::equal(want.begin(), want.end(), packet.begin());
}

// Everything `port` receives now, each frame's bytes after the virtio-net
// header, which must ask for no offload.
std::vector<std::vector<uint8_t>> receive_all(VxlanSocketPort& port) {
    std::vector<std::vector<uint8_t>> out;
    for (const auto& p : receive_packets(port)) {
        EXPECT_TRUE(plain_header(p, false) || plain_header(p, true));
        out.emplace_back(p.begin() + sizeof(virtio::NetHeader), p.end());
    }
    return out;
}

// The frames the wire carried, from received packets: a merged GSO frame
// split again the kernel's way (gro::testing::gso_segment), each segment's
// checksum completed; a plain frame as it is. Each frame's bytes after the
// virtio-net header.
std::vector<std::vector<uint8_t>> segments_of(const std::vector<std::vector<uint8_t>>& packets) {
    std::vector<std::vector<uint8_t>> out;
    for (const auto& p : packets) {
        if (p[virtio::kNetHeaderGsoTypeOffset] == virtio::NetHeader::kGsoNone) {
            EXPECT_TRUE(plain_header(p, false) || plain_header(p, true));
            out.emplace_back(p.begin() + sizeof(virtio::NetHeader), p.end());
            continue;
        }
        const auto segments = gro::testing::gso_segment(p, sizeof(virtio::NetHeader));
        EXPECT_FALSE(segments.empty());
        for (const auto& s : segments) {
            const auto whole = gro::testing::complete_checksum(s, sizeof(virtio::NetHeader));
            out.emplace_back(whole.begin() + sizeof(virtio::NetHeader), whole.end());
        }
    }
    return out;
}

std::vector<std::vector<uint8_t>> receive_segments(VxlanSocketPort& port) {
    return segments_of(receive_packets(port));
}

template <typename T = uint64_t>
T fact(const VxlanSocketPort& port, const std::string& section, const std::string& key) {
    std::vector<Port::Fact> facts;
    port.describe(facts);
    for (const auto& f : facts) {
        if (f.section == section && f.key == key) {
            return std::get<T>(f.value);
        }
    }
    ADD_FAILURE() << "no fact " << section << "." << key;
    return T{};
}

// The exception text `change` throws, "" if none.
template <typename F>
std::string refused(F&& change) {
    try {
        change();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// An inner frame with the given destination and source MACs.
std::vector<uint8_t> frame_between(const uint8_t* dst, const uint8_t* src, uint32_t id,
                                   uint32_t len = 64) {
    std::vector<uint8_t> f = guest_frame(id, len);
    std::memcpy(f.data() + 12, dst, 6);
    std::memcpy(f.data() + 18, src, 6);
    return f;
}

// An IPv4 TCP frame of `payload` bytes with a partial checksum, as a TSO
// guest hands it over, and that frame as a GSO packet of `mss`-byte segments.
virtio::test::Frame tcp_frame(uint32_t payload,
                              uint8_t tcp_flags = virtio::test::FrameSpec{}.tcp_flags) {
    virtio::test::FrameSpec spec;
    spec.payload = payload;
    spec.tcp_flags = tcp_flags;
    virtio::test::Frame f = virtio::test::make_frame(spec);
    virtio::test::make_partial(f);
    return f;
}

std::vector<uint8_t> tcp_gso_packet(const virtio::test::Frame& f, uint16_t mss) {
    virtio::test::SenderHeader h;
    h.flags = virtio::NetHeader::kFlagNeedsCsum;
    h.gso_type = virtio::NetHeader::kGsoTcpV4;
    h.hdr_len = static_cast<uint16_t>(f.payload_at);
    h.gso_size = mss;
    h.csum_start = static_cast<uint16_t>(f.l4);
    h.csum_offset = 16;
    return virtio::test::sender_packet(h, f);
}

constexpr uint8_t kMacA[6] = {0x02, 0, 0, 0, 0, 0x0a};
constexpr uint8_t kMacB[6] = {0x02, 0, 0, 0, 0, 0x0b};
constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

TEST(VxlanSocketPort, a_burst_to_an_unknown_mac_floods_in_one_send_and_arrives_in_one_receive) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    Sent sent;
    for (uint32_t i = 0; i < 64; ++i) {
        sent.add(frame_between(kMacB, kMacA, i));
    }
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 64);
    EXPECT_EQ(fact(a, "vxlan_send", "sendmmsg_calls"), 1u);
    EXPECT_EQ(fact(a, "vxlan_send", "gso_messages_sent"), 1u);
    EXPECT_EQ(a.tx_counters(0).packets.get(), 64u);
    const auto got = receive_all(b);
    ASSERT_EQ(got.size(), 64u);
    for (uint32_t i = 0; i < 64; ++i) {
        EXPECT_EQ(got[i], std::vector<uint8_t>(sent.packets[i].begin() + 12, sent.packets[i].end()))
            << "frame " << i;
    }
    EXPECT_EQ(b.rx_counters(0).packets.get(), 64u);
    EXPECT_EQ(b.learned_macs(steady_now_ns()), 1u);   // kMacA, behind 127.0.0.1
    EXPECT_EQ(fact(b, "vxlan", "learned_macs"), 1u);  // the worker's count, for the control thread
    b.remove_peer("127.0.0.1");
    EXPECT_EQ(fact(b, "vxlan", "learned_macs"), 0u);
}

TEST(VxlanSocketPort, a_learned_mac_goes_to_its_peer_only_and_broadcast_to_every_peer) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1", "127.0.0.3"}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {"127.0.0.2"}));
    Sent from_a;
    from_a.add(frame_between(kBroadcast, kMacA, 1));
    ASSERT_EQ(a.transmit_burst(0, from_a.make()), 1);
    ASSERT_EQ(receive_all(b).size(), 1u);  // b learns kMacA behind a

    Sent from_b;
    from_b.add(frame_between(kMacA, kMacB, 2));       // known: a only
    from_b.add(frame_between(kBroadcast, kMacB, 3));  // every peer
    ASSERT_EQ(b.transmit_burst(0, from_b.make()), 2);
    const auto at_a = receive_all(a);
    const auto at_c = receive_all(c);
    ASSERT_EQ(at_a.size(), 2u);
    ASSERT_EQ(at_c.size(), 1u);
    EXPECT_EQ(at_c[0],
              std::vector<uint8_t>(from_b.packets[1].begin() + 12, from_b.packets[1].end()));

    // A removed peer's MACs are forgotten: unicast to kMacA floods again,
    // to c alone now.
    b.remove_peer("127.0.0.1");
    EXPECT_EQ(b.peers(), std::vector<std::string>{"127.0.0.3"});
    Sent again;
    again.add(frame_between(kMacA, kMacB, 4));
    ASSERT_EQ(b.transmit_burst(0, again.make()), 1);
    EXPECT_EQ(receive_all(a).size(), 0u);
    EXPECT_EQ(receive_all(c).size(), 1u);
}

TEST(VxlanSocketPort, a_stranger_is_delivered_but_not_learned) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.3"}));  // a is no peer of b
    Sent sent;
    sent.add(frame_between(kMacB, kMacA, 1));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 1);
    EXPECT_EQ(receive_all(b).size(), 1u);
    EXPECT_EQ(b.learned_macs(steady_now_ns()), 0u);
}

TEST(VxlanSocketPort, a_tcp_gso_frame_leaves_as_segments_in_one_message_and_arrives_merged) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    // PSH|ACK: a split puts PSH on the last segment, which a merge takes
    // back (FIN and CWR, the default frame's, would end a run).
    virtio::test::Frame f = tcp_frame(14000, packet::kTcpPsh | packet::kTcpAck);
    Sent sent;
    sent.add(tcp_gso_packet(f, 1400));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 1);
    EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 10u);
    EXPECT_EQ(fact(a, "vxlan_send", "messages_sent"), 1u);

    // The ten segments, each checksum verified, are one GSO frame again.
    const auto got = receive_packets(b);
    ASSERT_EQ(got.size(), 1u);
    const std::vector<uint8_t>& merged = got[0];
    EXPECT_EQ(merged[virtio::kNetHeaderFlagsOffset], virtio::NetHeader::kFlagNeedsCsum);
    EXPECT_EQ(merged[virtio::kNetHeaderGsoTypeOffset], virtio::NetHeader::kGsoTcpV4);
    EXPECT_EQ(packet::load_le16(merged.data() + virtio::kNetHeaderGsoSizeOffset), 1400);
    EXPECT_EQ(merged.size(), sizeof(virtio::NetHeader) + f.bytes.size());
    EXPECT_EQ(b.rx_counters(0).packets.get(), 10u);
    EXPECT_EQ(b.rx_counters(0).gro_frames.get(), 1u);
    EXPECT_EQ(b.rx_counters(0).gro_segments.get(), 10u);

    // Split again the kernel's way, it gives back what the wire carried:
    // the sender's frame cut into checksummed segments of 1400 bytes.
    const auto wire = segments_of({sent.packets[0]});
    ASSERT_EQ(wire.size(), 10u);
    const auto again = segments_of({merged});
    EXPECT_EQ(again, wire);
    for (const auto& seg : wire) {
        EXPECT_TRUE(virtio::test::l4_checksum_valid(seg, f.l3, f.l4, false, false));
    }
}

TEST(VxlanSocketPort, a_gso_frame_in_many_pieces_is_cut_without_a_copy_and_arrives_the_same) {
    // The segments leave as their headers (in the port's scratch) and
    // slices of the sender's pieces, split mid-header, mid-segment and
    // into a piece of one byte: what arrives is the frame cut the kernel's
    // way, whatever the pieces.
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    virtio::test::Frame f = tcp_frame(20000, packet::kTcpPsh | packet::kTcpAck);
    Sent sent;
    sent.add(tcp_gso_packet(f, 1448), {7, 40, 1500, 1501, 2949, 9000, 15000});
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 1);
    EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 14u);
    EXPECT_EQ(fact(a, "vxlan_send", "messages_sent"), 1u);
    const auto wire = segments_of({sent.packets[0]});
    ASSERT_EQ(wire.size(), 14u);
    EXPECT_EQ(receive_segments(b), wire);
}

TEST(VxlanSocketPort, a_message_is_not_cut_between_two_receives_so_its_frame_merges_whole) {
    // Two frames of 40 segments, two messages: a receive of up to 64
    // frames takes the first message and leaves the second whole for the
    // next, rather than merge 24 of its segments now and 16 later.
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    virtio::test::Frame f = tcp_frame(40 * 1000, packet::kTcpPsh | packet::kTcpAck);
    Sent sent;
    sent.add(tcp_gso_packet(f, 1000));
    sent.add(tcp_gso_packet(f, 1000));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 2);
    EXPECT_EQ(fact(a, "vxlan_send", "messages_sent"), 2u);
    const auto got = receive_packets(b);
    ASSERT_EQ(got.size(), 2u);
    for (const auto& p : got) {
        EXPECT_EQ(p.size(), sizeof(virtio::NetHeader) + f.bytes.size());
    }
    EXPECT_EQ(b.rx_counters(0).gro_segments.get(), 80u);
}

TEST(VxlanSocketPort, max_bounds_the_frames_handed_out_not_the_segments_merged_into_one) {
    // A switch asks for one frame after a hold ended in drops; it gets the
    // whole GSO frame back, not one segment of it.
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    virtio::test::Frame f = tcp_frame(14000, packet::kTcpPsh | packet::kTcpAck);
    Sent sent;
    sent.add(tcp_gso_packet(f, 1400));
    sent.add(frame_between(kBroadcast, kMacA, 1));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 2);
    packet::PacketBurst burst;
    ASSERT_EQ(b.receive_burst(0, burst, 1), 1);
    EXPECT_EQ(burst.packets[0].len, sizeof(virtio::NetHeader) + f.bytes.size());
    EXPECT_EQ(b.rx_counters(0).packets.get(), 10u);  // taken: the ten segments
    b.complete_burst(0, burst, 1);
    burst.clear();
    ASSERT_EQ(b.receive_burst(0, burst, 1), 1);  // then the broadcast, still ready
    EXPECT_EQ(burst.packets[0].len, sizeof(virtio::NetHeader) + 64);
    b.complete_burst(0, burst, 1);
    EXPECT_EQ(b.rx_counters(0).packets.get(), 11u);
    burst.clear();
    EXPECT_EQ(b.receive_burst(0, burst, 1), 0);
}

TEST(VxlanSocketPort, a_segment_whose_tcp_checksum_is_wrong_is_neither_merged_nor_said_valid) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    // Four consecutive segments of one flow, complete checksums; the third
    // one's payload changed after its checksum was computed.
    Sent sent;
    for (uint32_t i = 0; i < 4; ++i) {
        gro::testing::SegmentSpec spec;
        spec.data_valid = true;
        spec.payload_len = 1000;
        spec.seq = 1000 + i * 1000;
        spec.ip_id = static_cast<uint16_t>(1 + i);
        spec.payload_seed = i;
        sent.add(gro::testing::build_segment(spec));
    }
    sent.packets[2].back() ^= 0x5a;
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 4);

    const auto got = receive_packets(b);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0][virtio::kNetHeaderGsoTypeOffset], virtio::NetHeader::kGsoTcpV4);  // 1 and 2
    EXPECT_EQ(got[0].size(), sent.packets[0].size() + 1000);
    auto frame_of = [](const std::vector<uint8_t>& p) {
        return std::vector<uint8_t>(p.begin() + sizeof(virtio::NetHeader), p.end());
    };
    // The bad one as it came, with no claim; the one after it alone, verified.
    EXPECT_TRUE(plain_header(got[1], false));
    EXPECT_EQ(frame_of(got[1]), frame_of(sent.packets[2]));
    EXPECT_TRUE(plain_header(got[2], true));
    EXPECT_EQ(frame_of(got[2]), frame_of(sent.packets[3]));
    EXPECT_EQ(b.rx_counters(0).packets.get(), 4u);
    EXPECT_EQ(b.rx_counters(0).gro_frames.get(), 1u);
    EXPECT_EQ(b.rx_counters(0).gro_segments.get(), 2u);
}

TEST(VxlanSocketPort, a_frame_of_more_segments_than_one_send_takes_is_sent_over_several) {
    // 120 segments, flooded to two peers: 240 frames over four sends of at
    // most 64, each peer's in order, none twice, and the plain frames
    // around it in their places (the segments arrive merged again).
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2", "127.0.0.3"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {"127.0.0.1"}));
    virtio::test::Frame f = tcp_frame(60000);
    Sent sent;
    sent.add(frame_between(kBroadcast, kMacA, 1));
    sent.add(tcp_gso_packet(f, 500));  // to f's destination: unknown, flooded
    sent.add(frame_between(kBroadcast, kMacA, 2));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 3);
    EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u * (1 + 120 + 1));
    EXPECT_EQ(fact(a, "vxlan_send", "sendmmsg_calls"), 4u);
    for (VxlanSocketPort* receiver : {&b, &c}) {
        const auto got = receive_segments(*receiver);
        ASSERT_EQ(got.size(), 122u);
        EXPECT_EQ(got[0].size(), 64u);
        EXPECT_EQ(got[121].size(), 64u);
        std::vector<uint8_t> payload;
        for (size_t i = 1; i <= 120; ++i) {
            ASSERT_EQ(got[i].size(), f.payload_at + 500);
            EXPECT_TRUE(virtio::test::l4_checksum_valid(got[i], f.l3, f.l4, false, false));
            payload.insert(payload.end(), got[i].begin() + static_cast<long>(f.payload_at),
                           got[i].end());
        }
        EXPECT_EQ(payload, std::vector<uint8_t>(f.bytes.begin() + static_cast<long>(f.payload_at),
                                                f.bytes.end()));
    }
}

TEST(VxlanSocketPort, a_partial_checksum_is_completed_on_the_way) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    virtio::test::FrameSpec spec;
    spec.udp = true;
    spec.payload = 300;
    virtio::test::Frame f = virtio::test::make_frame(spec);
    virtio::test::make_partial(f);
    virtio::test::SenderHeader h;
    h.flags = virtio::NetHeader::kFlagNeedsCsum;
    h.csum_start = static_cast<uint16_t>(f.l4);
    h.csum_offset = 6;
    Sent sent;
    sent.add(virtio::test::sender_packet(h, f));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 1);
    const auto got = receive_all(b);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].size(), f.bytes.size());
    EXPECT_TRUE(virtio::test::l4_checksum_valid(got[0], f.l3, f.l4, false, true));
}

TEST(VxlanSocketPort, a_packet_too_short_for_an_ethernet_header_is_dropped_and_counted) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {"127.0.0.1"}));
    Sent sent;
    sent.add(guest_frame(1, 13));
    sent.add(frame_between(kMacB, kMacA, 2));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 2);
    EXPECT_EQ(
        a.tx_counters(0).drops[static_cast<size_t>(packet::DropReason::packet_too_short)].get(),
        1u);
    EXPECT_EQ(a.tx_counters(0).packets.get(), 1u);  // the dropped one is counted by reason only
    EXPECT_EQ(receive_all(b).size(), 1u);
}

TEST(VxlanSocketPort, with_no_peer_a_flooded_packet_is_dropped_as_no_destination) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {}));
    Sent sent;
    sent.add(frame_between(kBroadcast, kMacA, 1));
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 1);
    EXPECT_EQ(a.tx_counters(0).drops[static_cast<size_t>(packet::DropReason::no_destination)].get(),
              1u);
    EXPECT_EQ(a.tx_counters(0).packets.get(), 0u);
    EXPECT_EQ(fact(a, "vxlan_send", "sendmmsg_calls"), 0u);
}

TEST(VxlanSocketPort, peer_changes_are_checked) {
    VxlanSocketPort a("up0", options_for("127.0.0.1", {"127.0.0.2"}));
    EXPECT_EQ(refused([&] { a.add_peer("127.0.0.2"); }),
              "vxlan uplink 'up0': peer 127.0.0.2 is there already");
    EXPECT_EQ(refused([&] { a.remove_peer("127.0.0.9"); }),
              "vxlan uplink 'up0': peer 127.0.0.9 is not there");
    EXPECT_EQ(refused([&] { a.add_peer("not-an-ip"); }),
              "vxlan uplink 'up0': peer 'not-an-ip' is not an IPv4 or IPv6 address");
    EXPECT_EQ(refused([&] { a.add_peer("::1"); }),
              "vxlan uplink 'up0': peer ::1 is not of the local address's family (one family per "
              "overlay)");
    a.add_peer("127.0.0.3");
    EXPECT_EQ(a.peers(), (std::vector<std::string>{"127.0.0.2", "127.0.0.3"}));
}

// ---- control-plane mode (EVPN) ----------------------------------------------

packet::MacAddress mac_of(const uint8_t* m) {
    return {m[0], m[1], m[2], m[3], m[4], m[5]};
}

constexpr uint8_t kMacC[6] = {0x02, 0, 0, 0, 0, 0x0c};
constexpr uint8_t kMacD[6] = {0x02, 0, 0, 0, 0, 0x0d};
constexpr uint8_t kMacE[6] = {0x02, 0, 0, 0, 0, 0x0e};

// EVPN keeps the kernel's vxlan device (zebra's table), which holds the
// VXLAN port: a steered port binds a port of the kernel's choosing, takes
// the VXLAN port's datagrams to its address away from the device, and
// sends to the VXLAN port. In a namespace of the test's own: the steering is the
// whole namespace's.
TEST(VxlanSocketPort, a_steered_port_takes_the_vxlan_port_from_a_device_that_holds_it) {
    vnet::test::in_own_netns([] {
        VxlanSocketPortOptions oa = options_for("127.0.0.1", {"127.0.0.2"});
        VxlanSocketPortOptions ob = options_for("127.0.0.2", {"127.0.0.1"});
        oa.dstport = ob.dstport = 4789;
        // As the kernel's vxlan device binds it: any address.
        const sockaddr_storage any = make_vxlan_address("device", "0.0.0.0", 4789);
        UniqueFd device(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        ASSERT_EQ(
            ::bind(device.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(sockaddr_in)), 0);
        // Unsteered, the port is taken.
        EXPECT_THROW(VxlanSocketPort("a", oa), PortSetupError);
        oa.steer_dstport = ob.steer_dstport = true;
        VxlanSocketPort a("a", oa);
        VxlanSocketPort b("b", ob);
        EXPECT_NE(a.local_port(), 4789);
        EXPECT_EQ(a.dstport(), 4789);
        EXPECT_EQ(fact(a, "vxlan", "port"), a.local_port());
        EXPECT_EQ(fact(a, "vxlan", "dstport"), 4789u);
        EXPECT_NE(fact(a, "vxlan", "steering_program"), 0u);

        Sent sent;
        sent.add(frame_between(kBroadcast, kMacA, 1));
        sent.add(frame_between(kMacB, kMacA, 2));
        ASSERT_EQ(a.transmit_burst(0, sent.make()), 2);
        const auto got = receive_all(b);
        ASSERT_EQ(got.size(), 2u);
        EXPECT_EQ(got[1],
                  std::vector<uint8_t>(sent.packets[1].begin() + 12, sent.packets[1].end()));
        char byte = 0;
        EXPECT_EQ(::recv(device.get(), &byte, 1, MSG_DONTWAIT), -1);  // the device got nothing
        EXPECT_EQ(errno, EAGAIN);
    });
}

// Sends `burst` through `port` until the port takes all of it, waiting
// for the socket to drain whenever it is full. Returns the calls it took.
int send_until_taken(VxlanSocketPort& port, const packet::PacketBurst& burst) {
    int calls = 0;
    uint16_t done = 0;
    packet::PacketBurst rest = burst;
    while (done < burst.count && calls < 1000) {
        ++calls;
        // The packets not taken yet, as a worker offers them again: the
        // same memory, the first of them first.
        rest.clear();
        for (uint16_t i = done; i < burst.count; ++i) {
            const std::span<const iovec> pieces = burst.packet_iovecs(i);
            std::copy(pieces.begin(), pieces.end(), rest.free_iovecs().begin());
            rest.push(static_cast<uint16_t>(pieces.size()), burst.packets[i].len,
                      burst.packets[i].token);
        }
        const uint16_t n = port.transmit_burst(0, rest);
        done = static_cast<uint16_t>(done + n);
        if (done < burst.count) {
            pollfd p{.fd = port.transmit_wait(0).fd, .events = POLLOUT, .revents = 0};
            ::poll(&p, 1, 200);
        }
    }
    EXPECT_EQ(done, burst.count);
    return calls;
}

// The cut-off tests' bed, in a namespace of the test's own: its loopback
// slowed by a token bucket (tc tbf), so that a datagram waiting in it holds
// the sender's send buffer, the kernel's least (one 6 KB datagram fills
// it), and the next send finds the socket full; a sends to b, c and d.
int slow_loopback() {
    return std::system("tc qdisc add dev lo root tbf rate 10mbit burst 7000 limit 1000000");
}
VxlanSocketPortOptions smallest_buffer(VxlanSocketPortOptions o) {
    o.socket_buffer_bytes = 1;
    return o;
}
struct SlowFlood {
    VxlanSocketPort a{
        "a", smallest_buffer(options_for("127.0.0.1", {"127.0.0.2", "127.0.0.3", "127.0.0.4"}))};
    VxlanSocketPort b{"b", options_for("127.0.0.2", {})};
    VxlanSocketPort c{"c", options_for("127.0.0.3", {})};
    VxlanSocketPort d{"d", options_for("127.0.0.4", {})};
};
// Runs `test` on the bed, in a namespace of its own.
template <typename F>
void in_slow_flood(F&& test) {
    vnet::test::in_own_netns([&test] {
        ASSERT_EQ(slow_loopback(), 0);
        SlowFlood bed;
        test(bed);
    });
}

// Once the bucket has let the last datagrams through, each of `ports`
// has every packet of `sent`, once and in order.
void expect_every_packet_once(const Sent& sent, std::initializer_list<VxlanSocketPort*> ports) {
    ::usleep(300 * 1000);
    std::vector<std::vector<uint8_t>> frames;
    for (const std::vector<uint8_t>& p : sent.packets) {
        frames.emplace_back(p.begin() + 12, p.end());
    }
    for (VxlanSocketPort* port : ports) {
        EXPECT_EQ(receive_all(*port), frames) << "at " << port->name();
    }
}

// A packet the socket fills up in the middle of resumes after what went:
// a broadcast flooded to three VTEPs of which the socket took two reaches
// the third on the next call, and none of them twice.
TEST(VxlanSocketPort, a_packet_the_socket_cut_off_resumes_after_what_went) {
    in_slow_flood([](SlowFlood& bed) {
        auto& [a, b, c, d] = bed;
        Sent sent;
        sent.add(frame_between(kBroadcast, kMacA, 1, 6000));
        // b's datagram passed the bucket, c's waits in it: d's finds the
        // socket full. At once again: still full, so nothing goes and the
        // packet still resumes at d, not at b; or, on a machine slow
        // enough (the ASan build), the bucket let c's datagram through
        // meanwhile (~5 ms) and d's goes now. Either way nothing twice.
        ASSERT_EQ(a.transmit_burst(0, sent.make()), 0);
        ASSERT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u);
        const uint16_t again = a.transmit_burst(0, sent.burst);
        ASSERT_LE(again, 1);
        ASSERT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u + again);
        if (again == 0) {
            send_until_taken(a, sent.burst);
        }
        ::usleep(300 * 1000);  // the bucket lets the last datagrams through
        const std::vector<uint8_t> frame(sent.packets[0].begin() + 12, sent.packets[0].end());
        for (VxlanSocketPort* port : {&b, &c, &d}) {
            EXPECT_EQ(receive_all(*port), std::vector<std::vector<uint8_t>>{frame})
                << "at " << port->name();
        }
        EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 3u);

        // A GSO frame of 45 segments is two messages (65,000 bytes the
        // most in one): the second finds the socket full, and resumes at
        // its first segment. Each segment reaches b once, in order.
        VxlanSocketPortOptions ob = smallest_buffer(options_for("127.0.0.1", {"127.0.0.2"}));
        ob.dstport = static_cast<uint16_t>(a.dstport() + 1);
        VxlanSocketPort a2("a2", ob);
        VxlanSocketPortOptions o2 = options_for("127.0.0.2", {});
        o2.dstport = ob.dstport;
        VxlanSocketPort b2("b2", o2);
        virtio::test::Frame f = tcp_frame(45 * 1448, packet::kTcpPsh | packet::kTcpAck);
        Sent gso;
        gso.add(tcp_gso_packet(f, 1448));
        EXPECT_GE(send_until_taken(a2, gso.make()), 2);
        EXPECT_EQ(fact(a2, "vxlan_send", "frames_sent"), 45u);
        ::usleep(300 * 1000);
        const auto wire = segments_of({gso.packets[0]});
        ASSERT_EQ(wire.size(), 45u);
        EXPECT_EQ(receive_segments(b2), wire);
    });
}

// Two broadcasts flooded to b, c and d: b's message holds both (one VTEP,
// one length), so when c's finds the socket full the second packet has
// reached b already, ahead of the first packet's frames to c and d. The
// calls after it send the rest of that plan, not the packets again: every
// VTEP gets each packet once, in order.
TEST(VxlanSocketPort, a_frame_that_went_ahead_of_a_full_socket_is_not_sent_again) {
    in_slow_flood([](SlowFlood& bed) {
        auto& [a, b, c, d] = bed;
        Sent sent;
        sent.add(frame_between(kBroadcast, kMacA, 1, 6000));
        sent.add(frame_between(kBroadcast, kMacA, 2, 6000));
        ASSERT_EQ(a.transmit_burst(0, sent.make()), 0);
        ASSERT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u);  // both to b
        EXPECT_GE(send_until_taken(a, sent.burst), 2);
        expect_every_packet_once(sent, {&b, &c, &d});
        EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 6u);
        EXPECT_EQ(a.tx_counters(0).packets.get(), 2u);
    });
}

// Two broadcasts flooded to b, c and d, cut off by the full socket after
// b's message (it holds both), and then `change` turns a's table over.
// The messages planned before go where they were planned to, not to
// whoever holds their slots now, and none of them twice: b, c and d each
// get both packets once, and e, which the new table adds, neither.
template <typename F>
void table_changed_while_full(F&& change) {
    in_slow_flood([&change](SlowFlood& bed) {
        auto& [a, b, c, d] = bed;
        VxlanSocketPort e{"e", options_for("127.0.0.5", {})};
        Sent sent;
        sent.add(frame_between(kBroadcast, kMacA, 1, 6000));
        sent.add(frame_between(kBroadcast, kMacA, 2, 6000));
        ASSERT_EQ(a.transmit_burst(0, sent.make()), 0);
        ASSERT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u);  // both to b
        change(a);
        send_until_taken(a, sent.burst);
        expect_every_packet_once(sent, {&b, &c, &d});
        EXPECT_TRUE(receive_all(e).empty());
        EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 6u);
        EXPECT_EQ(a.tx_counters(0).packets.get(), 2u);
    });
}

// Static peers: c is removed and e takes its slot.
TEST(VxlanSocketPort, a_full_sockets_planned_frames_go_where_planned_when_the_table_changes) {
    table_changed_while_full([](VxlanSocketPort& a) {
        a.remove_peer("127.0.0.3");
        a.add_peer("127.0.0.5");
    });
}

// EVPN, whose every table rebuilds the slots whole: a flood list that
// puts e first moves b, c and d to other slots.
TEST(VxlanSocketPort, a_full_sockets_planned_frames_go_where_planned_across_an_evpn_table) {
    table_changed_while_full([](VxlanSocketPort& a) {
        VxlanForwardingEntries table;
        table.flood = {"127.0.0.5", "127.0.0.2", "127.0.0.3", "127.0.0.4"};
        EXPECT_EQ(a.set_forwarding(table).flood, 0u);
    });
}

// A GSO frame of 45 segments flooded to b, c and d is 135 frames, more
// than one send plans (64): b's 45 and c's first 19. The socket fills
// after b's first message, and then d is removed. The planned segments
// still go, each once; the packet plans no more of itself, since its rest
// would be named by slots that may now be other VTEPs': c keeps its 19
// segments, d gets nothing, and the rest is counted as a tx error.
TEST(VxlanSocketPort, a_packet_planned_in_part_plans_no_more_once_the_table_changes) {
    in_slow_flood([](SlowFlood& bed) {
        auto& [a, b, c, d] = bed;
        virtio::test::Frame f = tcp_frame(45 * 1448, packet::kTcpPsh | packet::kTcpAck);
        Sent gso;
        gso.add(tcp_gso_packet(f, 1448));
        ASSERT_EQ(a.transmit_burst(0, gso.make()), 0);
        ASSERT_LT(fact(a, "vxlan_send", "frames_sent"), 45u);  // full before b had all
        a.remove_peer("127.0.0.4");
        send_until_taken(a, gso.burst);
        ::usleep(300 * 1000);
        const auto wire = segments_of({gso.packets[0]});
        ASSERT_EQ(wire.size(), 45u);
        EXPECT_EQ(receive_segments(b), wire);
        EXPECT_EQ(receive_segments(c), std::vector(wire.begin(), wire.begin() + 19));
        EXPECT_TRUE(receive_all(d).empty());
        EXPECT_EQ(fact(a, "vxlan_send", "frames_sent"), 64u);
        EXPECT_EQ(a.tx_counters(0).drops[static_cast<size_t>(packet::DropReason::tx_error)].get(),
                  1u);
        EXPECT_EQ(a.tx_counters(0).packets.get(), 1u);
    });
}

// The source dropped the cut-off packet (a switch's hold ended) and a new
// one came in the same buffer, under the same token and of the same
// length: it is sent from its start, to every VTEP.
TEST(VxlanSocketPort, a_new_packet_in_a_cut_off_packets_buffer_is_sent_whole) {
    in_slow_flood([](SlowFlood& bed) {
        auto& [a, b, c, d] = bed;
        Sent sent;
        sent.add(frame_between(kBroadcast, kMacA, 1, 6000));
        const std::vector<uint8_t> first(sent.packets[0].begin() + 12, sent.packets[0].end());
        ASSERT_EQ(a.transmit_burst(0, sent.make()), 0);  // two VTEPs had it, the third did not
        ASSERT_EQ(fact(a, "vxlan_send", "frames_sent"), 2u);
        // The new packet, written over the old one in place.
        const std::vector<uint8_t> next = frame_between(kBroadcast, kMacA, 2, 6000);
        std::copy(next.begin(), next.end(), sent.packets[0].begin());
        ASSERT_NE(std::vector<uint8_t>(next.begin() + 12, next.end()), first);
        send_until_taken(a, sent.burst);
        ::usleep(300 * 1000);
        const std::vector<uint8_t> second(next.begin() + 12, next.end());
        EXPECT_EQ(receive_all(b), (std::vector<std::vector<uint8_t>>{first, second}));
        EXPECT_EQ(receive_all(c), (std::vector<std::vector<uint8_t>>{first, second}));
        EXPECT_EQ(receive_all(d), std::vector<std::vector<uint8_t>>{second});
    });
}

TEST(VxlanSocketPortControlPlane, a_remote_mac_goes_to_its_vtep_only_even_one_not_flooded_to) {
    // a's static peer b is replaced by the table: flood to b and c, kMacB
    // behind b, kMacD behind d (not on the flood list: its type-3 route is
    // not there yet).
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {}));
    VxlanSocketPort d("d", options_for("127.0.0.4", {}));
    EXPECT_FALSE(a.control_plane());
    a.set_forwarding({.flood = {"127.0.0.2", "127.0.0.3"},
                      .remotes = {{mac_of(kMacB), "127.0.0.2"}, {mac_of(kMacD), "127.0.0.4"}}});
    EXPECT_TRUE(a.control_plane());
    EXPECT_EQ(a.peers(), (std::vector<std::string>{"127.0.0.2", "127.0.0.3"}));
    EXPECT_EQ(fact<std::string>(a, "vxlan", "control_plane"), "evpn");
    EXPECT_EQ(fact(a, "vxlan", "flood_vteps"), 2u);
    EXPECT_EQ(fact(a, "vxlan", "remotes"), 2u);
    EXPECT_EQ(fact(a, "vxlan", "remotes_not_held"), 0u);

    Sent sent;
    sent.add(frame_between(kMacB, kMacA, 1));       // b only
    sent.add(frame_between(kMacD, kMacA, 2));       // d only
    sent.add(frame_between(kBroadcast, kMacA, 3));  // b and c
    sent.add(frame_between(kMacC, kMacA, 4));       // unknown: b and c
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 4);
    auto inner = [&](size_t k) {
        return std::vector<uint8_t>(sent.packets[k].begin() + 12, sent.packets[k].end());
    };
    using Frames = std::vector<std::vector<uint8_t>>;
    EXPECT_EQ(receive_all(b), (Frames{inner(0), inner(2), inner(3)}));
    EXPECT_EQ(receive_all(c), (Frames{inner(2), inner(3)}));
    EXPECT_EQ(receive_all(d), (Frames{inner(1)}));
}

TEST(VxlanSocketPortControlPlane, a_received_frame_is_not_learned) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {}));
    a.set_forwarding({.flood = {"127.0.0.2", "127.0.0.3"}, .remotes = {}});
    b.set_forwarding({.flood = {"127.0.0.1"}, .remotes = {}});
    // b sends from kMacB: a, which learns nothing, still floods to kMacB.
    Sent from_b;
    from_b.add(frame_between(kBroadcast, kMacB, 1));
    ASSERT_EQ(b.transmit_burst(0, from_b.make()), 1);
    ASSERT_EQ(receive_all(a).size(), 1u);
    EXPECT_EQ(a.learned_macs(steady_now_ns()), 0u);
    Sent from_a;
    from_a.add(frame_between(kMacB, kMacA, 2));
    ASSERT_EQ(a.transmit_burst(0, from_a.make()), 1);
    EXPECT_EQ(receive_all(b).size(), 1u);
    EXPECT_EQ(receive_all(c).size(), 1u);
}

TEST(VxlanSocketPortControlPlane, the_control_planes_mac_is_not_moved_by_a_frame_from_elsewhere) {
    // kMacB is behind b; c sends from kMacB (its old host, say): a still
    // sends kMacB's frames to b alone.
    VxlanSocketPort a("a", options_for("127.0.0.1", {}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {"127.0.0.1"}));
    a.set_forwarding(
        {.flood = {"127.0.0.2", "127.0.0.3"}, .remotes = {{mac_of(kMacB), "127.0.0.2"}}});
    Sent from_c;
    from_c.add(frame_between(kBroadcast, kMacB, 1));
    ASSERT_EQ(c.transmit_burst(0, from_c.make()), 1);
    ASSERT_EQ(receive_all(a).size(), 1u);
    Sent from_a;
    from_a.add(frame_between(kMacB, kMacA, 2));
    ASSERT_EQ(a.transmit_burst(0, from_a.make()), 1);
    EXPECT_EQ(receive_all(b).size(), 1u);
    EXPECT_EQ(receive_all(c).size(), 0u);
}

TEST(VxlanSocketPortControlPlane, a_second_table_replaces_the_first_whole) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {}));
    VxlanSocketPort d("d", options_for("127.0.0.4", {}));
    a.set_forwarding({.flood = {"127.0.0.2", "127.0.0.3"},
                      .remotes = {{mac_of(kMacB), "127.0.0.2"}, {mac_of(kMacD), "127.0.0.4"}}});
    // Now: c alone floods, kMacB moved behind c, kMacD withdrawn (and with
    // it d, which nothing names any more).
    a.set_forwarding({.flood = {"127.0.0.3"}, .remotes = {{mac_of(kMacB), "127.0.0.3"}}});
    EXPECT_EQ(a.peers(), std::vector<std::string>{"127.0.0.3"});
    EXPECT_EQ(fact(a, "vxlan", "flood_vteps"), 1u);
    EXPECT_EQ(fact(a, "vxlan", "remotes"), 1u);
    Sent sent;
    sent.add(frame_between(kMacB, kMacA, 1));       // c (moved)
    sent.add(frame_between(kMacD, kMacA, 2));       // unknown now: c
    sent.add(frame_between(kBroadcast, kMacA, 3));  // c
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 3);
    EXPECT_EQ(receive_all(b).size(), 0u);
    EXPECT_EQ(receive_all(c).size(), 3u);
    EXPECT_EQ(receive_all(d).size(), 0u);

    // An empty table: nothing to flood to; a packet to flood is dropped.
    a.set_forwarding({});
    EXPECT_TRUE(a.peers().empty());
    Sent more;
    more.add(frame_between(kMacB, kMacA, 4));
    ASSERT_EQ(a.transmit_burst(0, more.make()), 1);
    EXPECT_EQ(a.tx_counters(0).drops[static_cast<size_t>(packet::DropReason::no_destination)].get(),
              1u);
    EXPECT_EQ(receive_all(c).size(), 0u);
}

TEST(VxlanSocketPortControlPlane, bad_entries_are_left_out_and_the_rest_taken) {
    VxlanSocketPort a("up0", options_for("127.0.0.1", {}));
    VxlanSocketPort b("b", options_for("127.0.0.2", {}));
    VxlanSocketPort c("c", options_for("127.0.0.3", {}));
    // Each kind of bad entry beside good ones: a VTEP that is no address
    // (with the MAC behind it), one of the other family (in the flood list
    // and behind a MAC), a MAC that is not unicast.
    const VxlanForwardingSkipped skipped =
        a.set_forwarding({.flood = {"127.0.0.2", "::1"},
                          .remotes = {{mac_of(kMacB), "127.0.0.2"},
                                      {mac_of(kMacC), "127.0.0.3"},
                                      {mac_of(kMacD), "not-an-ip"},
                                      {mac_of(kMacE), "::1"},
                                      {mac_of(kBroadcast), "127.0.0.2"}}});
    EXPECT_EQ(skipped.flood, 1u);
    EXPECT_EQ(skipped.remotes, 3u);
    EXPECT_EQ(skipped.reasons,
              (std::vector<std::string>{
                  "vxlan uplink 'up0': VTEP ::1 is not of the local address's family (one family "
                  "per overlay)",
                  "vxlan uplink 'up0': VTEP 'not-an-ip' is not an IPv4 or IPv6 address",
                  "vxlan uplink 'up0': remote MAC ff:ff:ff:ff:ff:ff is not a unicast address"}));
    EXPECT_EQ(skipped.reasons_not_kept, 0u);

    // What was good is in force: flood to b only, kMacB at b, kMacC at c.
    EXPECT_TRUE(a.control_plane());
    EXPECT_EQ(a.peers(), std::vector<std::string>{"127.0.0.2"});
    EXPECT_EQ(fact(a, "vxlan", "remotes"), 2u);
    Sent sent;
    sent.add(frame_between(kMacB, kMacA, 1));
    sent.add(frame_between(kMacC, kMacA, 2));
    sent.add(frame_between(kMacD, kMacA, 3));  // its VTEP was left out: flooded
    ASSERT_EQ(a.transmit_burst(0, sent.make()), 3);
    EXPECT_EQ(receive_all(b).size(), 2u);
    EXPECT_EQ(receive_all(c).size(), 1u);
}

TEST(VxlanSocketPortControlPlane, vteps_beyond_the_slots_are_left_out_flood_list_first) {
    VxlanSocketPort a("up0", options_for("127.0.0.1", {}));
    // One VTEP more than the slots, between the two lists: the remote's
    // VTEP, the last one met, is the one left out, with its MAC.
    VxlanForwardingEntries too_many;
    for (uint32_t v = 0; v < kVxlanMaxVteps; ++v) {
        too_many.flood.push_back("127.0." + std::to_string(1 + v / 256) + "." +
                                 std::to_string(v % 256));
    }
    too_many.remotes.push_back({mac_of(kMacC), "127.0.9.1"});
    VxlanForwardingSkipped skipped = a.set_forwarding(too_many);
    EXPECT_EQ(skipped.flood, 0u);
    EXPECT_EQ(skipped.remotes, 1u);
    EXPECT_EQ(skipped.reasons,
              std::vector<std::string>{
                  "vxlan uplink 'up0': VTEP 127.0.9.1 left out: more than 1024 VTEPs (flood list "
                  "and remote MACs' together), the most one uplink holds"});
    EXPECT_EQ(a.peers().size(), size_t{kVxlanMaxVteps});
    EXPECT_EQ(fact(a, "vxlan", "remotes"), 0u);

    // The most VTEPs there are slots for: all taken.
    too_many.remotes.back().second = "127.0.1.7";  // one of the flood list's
    skipped = a.set_forwarding(too_many);
    EXPECT_TRUE(skipped.empty());
    EXPECT_EQ(fact(a, "vxlan", "remotes"), 1u);

    // Many bad entries: every one counted, the first kMaxReasons said.
    VxlanForwardingEntries bad;
    for (int i = 0; i < 10; ++i) {
        bad.flood.push_back("bad" + std::to_string(i));
    }
    skipped = a.set_forwarding(bad);
    EXPECT_EQ(skipped.flood, 10u);
    EXPECT_EQ(skipped.reasons.size(), VxlanForwardingSkipped::kMaxReasons);
    EXPECT_EQ(skipped.reasons_not_kept, 10u - VxlanForwardingSkipped::kMaxReasons);
    EXPECT_TRUE(a.peers().empty());
}

TEST(VxlanSocketPortControlPlane, a_first_table_of_bad_entries_still_takes_the_port_over) {
    // The control plane is in charge from its first table on, even one
    // with nothing good in it: the static peers and learning are gone.
    VxlanSocketPort a("up0", options_for("127.0.0.1", {"127.0.0.2"}));
    EXPECT_EQ(a.set_forwarding({.flood = {"bad"}, .remotes = {}}).flood, 1u);
    EXPECT_TRUE(a.control_plane());
    EXPECT_TRUE(a.peers().empty());
    EXPECT_FALSE(refused([&] { a.add_peer("127.0.0.3"); }).empty());
}

TEST(VxlanSocketPortControlPlane, static_peer_changes_are_refused_once_driven_by_evpn) {
    VxlanSocketPort a("up0", options_for("127.0.0.1", {"127.0.0.2"}));
    a.set_forwarding({.flood = {"127.0.0.3"}, .remotes = {}});
    EXPECT_EQ(a.peers(), std::vector<std::string>{"127.0.0.3"});  // the static peer went
    const std::string driven =
        "vxlan uplink 'up0' is driven by EVPN: its VTEPs are the control plane's, not static peers";
    EXPECT_EQ(refused([&] { a.add_peer("127.0.0.4"); }), driven);
    EXPECT_EQ(refused([&] { a.remove_peer("127.0.0.3"); }), driven);
    EXPECT_EQ(a.peers(), std::vector<std::string>{"127.0.0.3"});
}

TEST(VxlanSocketPortControlPlane, remote_macs_the_table_cannot_hold_flood_and_are_counted) {
    // More remotes than the table's slots: some probe runs fill up; those
    // MACs are counted, and every MAC given is either held or counted.
    VxlanSocketPort a("a", options_for("127.0.0.1", {}));
    VxlanForwardingEntries many{.flood = {"127.0.0.2"}, .remotes = {}};
    for (uint32_t i = 0; i < kVxlanMaxLearnedMacs + 100; ++i) {
        many.remotes.push_back({{0x02, 0, static_cast<uint8_t>(i >> 16),
                                 static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 1},
                                "127.0.0.3"});
    }
    a.set_forwarding(many);
    const uint64_t held = fact(a, "vxlan", "remotes");
    const uint64_t not_held = fact(a, "vxlan", "remotes_not_held");
    EXPECT_GE(not_held, 100u);
    EXPECT_EQ(held + not_held, kVxlanMaxLearnedMacs + 100u);
}

// ---- send lanes: a UDP source port per inner flow ---------------------------

// An IPv4 UDP frame from kMacA to kMacB of flow `flow` (its UDP source
// port) behind a 12-byte virtio-net header, `id` in its payload.
std::vector<uint8_t> udp_flow_frame(uint16_t flow, uint8_t id) {
    std::vector<uint8_t> f(12, 0);
    f.insert(f.end(), kMacB, kMacB + 6);
    f.insert(f.end(), kMacA, kMacA + 6);
    f.insert(f.end(),
             {0x08, 0x00, 0x45, 0, 0, 32, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2});
    f.insert(f.end(), {static_cast<uint8_t>(flow >> 8), static_cast<uint8_t>(flow), 0x14, 0x51, 0,
                       12, 0, 0, id, id, id, id});
    return f;
}

// What a plain UDP socket bound to 127.0.0.2 and the port's dstport
// received: per inner flow (the inner UDP source port), the outer source
// ports it came from.
std::map<uint16_t, std::set<uint16_t>> outer_ports_by_flow(int fd, size_t* datagrams) {
    std::map<uint16_t, std::set<uint16_t>> out;
    uint8_t buffer[2048];
    for (;;) {
        sockaddr_in from{};
        socklen_t from_len = sizeof(from);
        const ssize_t n = ::recvfrom(fd, buffer, sizeof(buffer), MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) {
            return out;
        }
        ++*datagrams;
        // VXLAN header (8), Ethernet (14), IPv4 (20), then the UDP source port.
        EXPECT_GE(n, 8 + 14 + 20 + 2);
        const auto flow = static_cast<uint16_t>(buffer[42] << 8 | buffer[43]);
        out[flow].insert(ntohs(from.sin_port));
    }
}

struct LaneRun {
    std::map<uint16_t, std::set<uint16_t>> by_flow;
    std::set<uint16_t> outer_ports;
    size_t datagrams = 0;
};

// 64 flows, each in 3 bursts of a packet per flow (so each burst
// interleaves them), from a port of `lanes` source ports.
LaneRun send_flows(VxlanSocketPort& port) {
    const sockaddr_storage at = make_vxlan_address("test", "127.0.0.2", test_port());
    UniqueFd receiver(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    int big = 4 << 20;
    ::setsockopt(receiver.get(), SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
    EXPECT_EQ(::bind(receiver.get(), reinterpret_cast<const sockaddr*>(&at), sizeof(sockaddr_in)),
              0);
    for (uint8_t round = 0; round < 3; ++round) {
        Sent sent;
        for (uint16_t flow = 0; flow < 64; ++flow) {
            sent.add(udp_flow_frame(static_cast<uint16_t>(30000 + flow), round));
        }
        EXPECT_EQ(port.transmit_burst(0, sent.make()), 64);
    }
    LaneRun run;
    run.by_flow = outer_ports_by_flow(receiver.get(), &run.datagrams);
    for (const auto& [flow, ports] : run.by_flow) {
        run.outer_ports.insert(ports.begin(), ports.end());
    }
    return run;
}

TEST(VxlanSocketPortLanes, each_flow_leaves_from_one_source_port_and_flows_spread_over_several) {
    VxlanSocketPortOptions o = options_for("127.0.0.1", {"127.0.0.2"});
    o.source_ports = 4;
    VxlanSocketPort a("a", o);
    const std::vector<uint16_t> lanes = a.source_ports();
    ASSERT_EQ(lanes.size(), 4u);
    EXPECT_EQ(lanes[0], a.local_port());  // lane 0: the receiving socket
    EXPECT_EQ(std::set<uint16_t>(lanes.begin(), lanes.end()).size(), 4u);
    std::string listed;
    for (const uint16_t p : lanes) {
        listed += (listed.empty() ? "" : ",") + std::to_string(p);
    }
    EXPECT_EQ(fact<std::string>(a, "vxlan", "source_ports"), listed);

    const LaneRun run = send_flows(a);
    EXPECT_EQ(run.datagrams, 3u * 64);
    ASSERT_EQ(run.by_flow.size(), 64u);
    for (const auto& [flow, ports] : run.by_flow) {
        EXPECT_EQ(ports.size(), 1u) << "flow " << flow;
    }
    EXPECT_GT(run.outer_ports.size(), 1u);
    for (const uint16_t p : run.outer_ports) {
        EXPECT_NE(std::find(lanes.begin(), lanes.end(), p), lanes.end()) << p;
    }
    EXPECT_EQ(a.tx_counters(0).packets.get(), 3u * 64);
    // A burst of 64 interleaved flows to one VTEP: a message per lane used,
    // and a call per lane's run of messages.
    EXPECT_LE(fact(a, "vxlan_send", "messages_sent"), 3u * 4);
    EXPECT_LE(fact(a, "vxlan_send", "sendmmsg_calls"), 3u * 4);
}

TEST(VxlanSocketPortLanes, one_source_port_sends_everything_from_the_receiving_socket) {
    VxlanSocketPort a("a", options_for("127.0.0.1", {"127.0.0.2"}));  // source_ports = 1
    ASSERT_EQ(a.source_ports(), std::vector<uint16_t>{a.local_port()});
    const LaneRun run = send_flows(a);
    EXPECT_EQ(run.datagrams, 3u * 64);
    EXPECT_EQ(run.outer_ports, std::set<uint16_t>{a.local_port()});
    // One lane, one VTEP, one length: a burst is one message, one call.
    EXPECT_EQ(fact(a, "vxlan_send", "sendmmsg_calls"), 3u);
}

TEST(VxlanSocketPortLanes, a_lane_socket_takes_no_datagram) {
    VxlanSocketPortOptions o = options_for("127.0.0.1", {"127.0.0.2"});
    o.source_ports = 2;
    VxlanSocketPort a("a", o);
    const uint16_t lane_port = a.source_ports()[1];
    const sockaddr_storage to = make_vxlan_address("test", "127.0.0.1", lane_port);
    UniqueFd sender(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    const char stray[] = "stray";
    EXPECT_EQ(::sendto(sender.get(), stray, sizeof(stray), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof(sockaddr_in)),
              static_cast<ssize_t>(sizeof(stray)));
    // Delivered to no one: the lane's filter drops it, and the receiving
    // socket never sees it.
    EXPECT_TRUE(receive_all(a).empty());
}

TEST(VxlanSocketPortLanes, source_ports_out_of_range_are_refused) {
    VxlanSocketPortOptions o = options_for("127.0.0.1", {});
    o.source_ports = 0;
    EXPECT_THROW(VxlanSocketPort("a", o), PortSetupError);
    o.source_ports = kVxlanMaxSendLanes + 1;
    EXPECT_THROW(VxlanSocketPort("a", o), PortSetupError);
    o.source_ports = kVxlanMaxSendLanes;
    EXPECT_EQ(VxlanSocketPort("a", o).source_ports().size(), kVxlanMaxSendLanes);
}

}  // namespace
}  // namespace vnet::ports
