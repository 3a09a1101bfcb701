// SwitchDatapath as a specification: bursts from one port reach exactly the
// ports the switch decided, tags added and stripped byte for byte without
// copying payloads, a full destination held for a bounded time then
// dropped as destination_full while the others keep receiving.
#include "dataplane/switch/switch_datapath.hpp"

#include <chrono>
#include <thread>

#include "dataplane/worker.hpp"

#include <gtest/gtest.h>

#include <deque>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "switch_frames.hpp"
#include "virtio/net_header.hpp"

namespace vnet::dataplane::switching {
namespace {

using packet::DropReason;
using test::frame;
using test::kBroadcast;
using test::kHeader;
using test::mac;

// A port that sends what a test queues and keeps every frame it is given,
// gathered from however many iovecs the switch built it from.
class SwitchTestPort : public ports::Port,
                       public ports::BurstSource,
                       public ports::BurstSink,
                       public ports::RxPacing {
public:
    explicit SwitchTestPort(std::string name) : Port(std::move(name)) {}
    ports::QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this, .rx_pacing = this};
    }
    bool queue_ready(uint16_t) const override { return ready; }
    uint32_t queue_generation(uint16_t) const override { return generation; }

    void queue(std::vector<uint8_t> f) { pending.push_back(std::move(f)); }
    uint16_t receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t max) override {
        ++polls;
        asked.push_back(max);
        uint16_t n = 0;
        while (n < max && !pending.empty()) {
            in_flight.push_back(std::move(pending.front()));
            pending.pop_front();
            std::vector<uint8_t>& b = in_flight.back();
            burst.free_iovecs()[0] = iovec{b.data(), b.size()};
            burst.push(1, static_cast<uint32_t>(b.size()), 0);
            ++n;
        }
        burst.header_size = kHeader;
        return n;
    }
    void complete_burst(uint16_t, const packet::PacketBurst&, uint16_t done) override {
        completed += done;
    }
    uint16_t transmit_burst(uint16_t, const packet::PacketBurst& burst) override {
        offered.push_back(burst.count);
        uint16_t n = 0;
        while (n < burst.count && room > 0) {
            std::vector<uint8_t> bytes(burst.packets[n].len);
            const iovec into{bytes.data(), bytes.size()};
            EXPECT_EQ(packet::copy_iovecs({&into, 1}, burst.packet_iovecs(n), bytes.size()),
                      bytes.size());
            received.push_back(std::move(bytes));
            --room;
            ++n;
        }
        if (n != 0) {
            defer_call();
        }
        return n;
    }
    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    // adaptive_rx as a guest's RX queue does it: every burst that brought
    // frames defers the call, due kCallDeferNs after the first.
    static constexpr uint64_t kCallDeferNs = 100;
    // Holding frames (rx_frames / rx_usecs) is a cross-connect's, not the switch's.
    void set_rx_coalescing(uint16_t, uint32_t, uint32_t, bool) override {}
    uint64_t rx_held_deadline(uint16_t) const override { return 0; }
    void publish_held_rx(uint16_t) override {}
    void publish_rx_before_sleep(uint16_t) override {}
    void set_adaptive_rx(uint16_t, bool on) override {
        adaptive = on;
        if (!on) {
            flush_rx_call(0);
        }
    }
    uint64_t rx_call_deadline(uint16_t) const override { return call_due; }
    void flush_rx_call(uint16_t) override {
        calls += call_due != 0 ? 1 : 0;
        call_due = 0;
    }
    void defer_call();

    std::deque<std::vector<uint8_t>> pending;
    std::deque<std::vector<uint8_t>> in_flight;
    std::vector<std::vector<uint8_t>> received;
    std::vector<uint16_t> offered;  // burst.count of every transmit_burst
    size_t room = SIZE_MAX;
    uint64_t completed = 0;
    uint64_t polls = 0;           // receive_burst calls
    std::vector<uint16_t> asked;  // the `max` of every receive_burst
    bool ready = true;
    uint32_t generation = 0;
    bool adaptive = false;
    uint64_t call_due = 0;  // a deferred call's deadline; 0: none
    uint64_t calls = 0;     // calls made
    packet::QueueCounters rx, tx;
};

uint64_t g_now = 0;

void SwitchTestPort::defer_call() {
    if (!adaptive) {
        ++calls;
    } else if (call_due == 0) {
        call_due = g_now + kCallDeferNs;
    }
}

struct Rig {
    explicit Rig(size_t ports, SwitchDatapathOptions o = {}) {
        g_now = 1;
        sw = std::make_unique<SwitchDatapath>("s0", o);
        for (size_t i = 0; i < ports; ++i) {
            port.push_back(std::make_unique<SwitchTestPort>("p" + std::to_string(i)));
        }
    }
    void attach(size_t i, MemberConfig c = {}) { sw->attach(*port[i], std::move(c)); }
    SwitchTestPort& operator[](size_t i) { return *port[i]; }
    uint64_t drops(DropReason r) const { return sw->core().counters().snapshot().drop(r); }

    std::unique_ptr<SwitchDatapath> sw;
    std::vector<std::unique_ptr<SwitchTestPort>> port;
};

MemberConfig access(uint16_t vlan) {
    MemberConfig c;
    c.vlans.untagged = vlan;
    return c;
}
MemberConfig trunk(uint16_t vlan) {
    MemberConfig c;
    c.vlans.untagged.reset();
    c.vlans.tagged.set(vlan);
    return c;
}

TEST(SwitchDatapath, broadcast_reaches_every_other_port_and_unicast_only_its_own) {
    Rig r(3);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[1].queue(frame(kBroadcast, mac(1)));
    r[2].queue(frame(kBroadcast, mac(2)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].received.size(), 2u);
    EXPECT_EQ(r[1].received.size(), 1u);
    EXPECT_EQ(r[2].received.size(), 1u);
    r[0].queue(frame(mac(2), mac(10)));
    r[0].queue(frame(mac(1), mac(10)));
    r[0].queue(frame(mac(2), mac(10)));
    TurnResult t = r.sw->run_turn(g_now);
    EXPECT_EQ(t.packets, 3u);
    EXPECT_EQ(r[1].received.size(), 2u);
    EXPECT_EQ(r[2].received.size(), 3u);
    EXPECT_EQ(r[1].received.back(), frame(mac(1), mac(10)));
    EXPECT_EQ(r[0].completed, 3u);
    EXPECT_EQ(r[1].completed, 1u);
    auto c = r.sw->core().counters().snapshot();
    EXPECT_EQ(c.learned, 3u);
    EXPECT_EQ(c.flooded, 2u);
}

TEST(SwitchDatapath, a_source_found_empty_again_and_again_is_polled_once_per_kIdlePollNs) {
    Rig r(2);
    r.attach(0);
    r.attach(1);
    for (uint16_t i = 0; i < kEmptyPollsBeforeIdle; ++i) {
        r.sw->run_turn(g_now);
    }
    EXPECT_EQ(r[0].polls, kEmptyPollsBeforeIdle);
    r.sw->run_turn(g_now);  // idle now: not looked at until kIdlePollNs passed
    EXPECT_EQ(r[0].polls, kEmptyPollsBeforeIdle);
    r[0].queue(frame(mac(1), mac(10)));
    r.sw->run_turn(g_now + kIdlePollNs - 1);
    EXPECT_TRUE(r[1].received.empty());
    g_now += kIdlePollNs;
    EXPECT_EQ(r.sw->run_turn(g_now).packets, 1u);
    EXPECT_EQ(r[1].received.size(), 1u);
    // A turn that moves frames polls until the source is dry: twice.
    EXPECT_EQ(r[0].polls, kEmptyPollsBeforeIdle + 2u);
    // A source that sent is polled every round again, with no time passing.
    r[0].queue(frame(mac(1), mac(10)));
    EXPECT_EQ(r.sw->run_turn(g_now).packets, 1u);
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].polls, kEmptyPollsBeforeIdle + 5u);
    EXPECT_EQ(r[1].received.size(), 2u);
}

TEST(SwitchDatapath, an_access_port_frame_gets_its_tag_toward_a_trunk_byte_for_byte) {
    Rig r(2);
    r.attach(0, access(100));
    r.attach(1, trunk(100));
    std::vector<uint8_t> f = frame(kBroadcast, mac(1));
    // A frame asking for a checksum: csum_start moves with the tag.
    f[virtio::kNetHeaderFlagsOffset] = virtio::NetHeader::kFlagNeedsCsum;
    packet::store_le16(&f[virtio::kNetHeaderCsumStartOffset], 34);
    r[0].queue(f);
    r.sw->run_turn(g_now);
    std::vector<uint8_t> want = frame(kBroadcast, mac(1), 100);
    want[virtio::kNetHeaderFlagsOffset] = virtio::NetHeader::kFlagNeedsCsum;
    packet::store_le16(&want[virtio::kNetHeaderCsumStartOffset], 38);
    ASSERT_EQ(r[1].received.size(), 1u);
    EXPECT_EQ(r[1].received[0], want);
    // A priority tag (VID 0), the one tag that does not leave toward a
    // trunk as it came: its VLAN id is written, its priority (5) kept.
    r[0].queue(frame(kBroadcast, mac(1), 0xa000));
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[1].received.size(), 2u);
    EXPECT_EQ(r[1].received[1], frame(kBroadcast, mac(1), 0xa064));
}

TEST(SwitchDatapath, a_trunk_frame_loses_its_tag_toward_an_access_port_byte_for_byte) {
    Rig r(2);
    r.attach(0, access(100));
    r.attach(1, trunk(100));
    r[1].queue(frame(kBroadcast, mac(1), 100));
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[0].received.size(), 1u);
    EXPECT_EQ(r[0].received[0], frame(kBroadcast, mac(1)));
}

TEST(SwitchDatapath, a_tagged_frame_between_trunks_passes_unchanged) {
    Rig r(2);
    r.attach(0, trunk(7));
    r.attach(1, trunk(7));
    std::vector<uint8_t> f = frame(kBroadcast, mac(1), 0xa007);  // PCP 5 kept
    r[0].queue(f);
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[1].received.size(), 1u);
    EXPECT_EQ(r[1].received[0], f);
}

TEST(SwitchDatapath, a_full_destination_is_held_then_dropped_while_others_receive) {
    SwitchDatapathOptions hold_1us;
    hold_1us.hold_ns = 1000;
    Rig r(3, hold_1us);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[2].room = 1;
    for (int i = 0; i < 4; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    // A held burst is the worker's cue to yield and spin, not to sleep at
    // once as a cross-connect's full destination is.
    EXPECT_EQ(r.sw->run_turn(g_now).wait, PathWait::holding);
    EXPECT_EQ(r[1].received.size(), 4u);
    EXPECT_EQ(r[2].received.size(), 1u);
    EXPECT_EQ(r[0].completed, 0u);  // held for port 2
    // Within the hold, room appears: nothing is lost.
    g_now += 500;
    r[2].room = 1;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[2].received.size(), 2u);
    EXPECT_EQ(r[0].completed, 0u);
    // The hold ends: the rest is dropped, the source completed.
    g_now += 1000;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[2].received.size(), 2u);
    EXPECT_EQ(r[0].completed, 4u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 2u);
    EXPECT_EQ(r[2].tx.drops[static_cast<size_t>(DropReason::destination_full)].get(), 2u);
    // Traffic from another port is never blocked by the stalled one.
    r[1].queue(frame(mac(1), mac(3)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].received.size(), 1u);
}

TEST(SwitchDatapath, a_held_group_is_retried_with_one_frame_until_the_destination_takes_it) {
    Rig r(2);
    r.attach(0);
    r.attach(1);
    r[1].room = 0;
    for (int i = 0; i < 4; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    r.sw->run_turn(g_now);
    g_now += 10;
    r.sw->run_turn(g_now);
    r.sw->run_turn(g_now);
    // The first try offers the whole group; the retries of the hold, one frame.
    EXPECT_EQ(r[1].offered, (std::vector<uint16_t>{4, 1, 1}));
    EXPECT_EQ(r[0].completed, 0u);
    // Room appears: the probe is taken, then the rest of the group at once.
    r[1].room = 10;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].offered, (std::vector<uint16_t>{4, 1, 1, 1, 3}));
    EXPECT_EQ(r[1].received.size(), 4u);
    EXPECT_EQ(r[0].completed, 4u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 0u);
}

// The sender owns its buffer while a burst is held: what it writes there
// after the decision must not reach the destination as a header.
TEST(SwitchDatapath, a_held_frame_leaves_with_the_source_mac_anti_spoofing_admitted) {
    Rig r(2);
    MemberConfig only_mac1;
    only_mac1.allowed_macs = {mac(1)};
    r.attach(0, only_mac1);
    r.attach(1);
    r[1].room = 0;
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[0].in_flight.size(), 1u);
    std::vector<uint8_t>& held = r[0].in_flight.back();
    const packet::MacAddress spoofed = mac(9);
    std::copy(spoofed.begin(), spoofed.end(), held.begin() + kHeader + 6);
    // Its virtio-net header too: the frame leaves from the copy classify
    // parsed (it leaves untagged as it came), header included.
    held[virtio::kNetHeaderFlagsOffset] = virtio::NetHeader::kFlagNeedsCsum;
    packet::store_le16(&held[virtio::kNetHeaderCsumStartOffset], 34);
    r[1].room = SIZE_MAX;
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[1].received.size(), 1u);
    EXPECT_EQ(r[1].received[0], frame(kBroadcast, mac(1)));
    EXPECT_EQ(r.drops(DropReason::spoofed), 0u);
}

TEST(SwitchDatapath, a_tag_written_into_a_held_frame_does_not_leave_its_vlan) {
    Rig r(2);
    r.attach(0, access(100));
    r.attach(1, trunk(100));
    r[1].room = 0;
    const std::vector<uint8_t> sent = frame(kBroadcast, mac(1));
    r[0].queue(sent);
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[0].in_flight.size(), 1u);
    // The ethertype becomes an 802.1Q tag for VLAN 200, as if the sender
    // had sent a tagged frame, which its access port would have dropped.
    std::vector<uint8_t>& held = r[0].in_flight.back();
    packet::store_be16(&held[kHeader + 12], packet::kEtherTypeVlan);
    packet::store_be16(&held[kHeader + 14], 200);
    r[1].room = SIZE_MAX;
    r.sw->run_turn(g_now);
    ASSERT_EQ(r[1].received.size(), 1u);
    std::vector<uint8_t> want = frame(kBroadcast, mac(1), 100);
    // The payload is the sender's to change; only the headers are the switch's.
    std::copy(held.begin() + kHeader + 14, held.end(), want.begin() + kHeader + 18);
    EXPECT_EQ(r[1].received[0], want);
    EXPECT_EQ(packet::load_be16(&r[1].received[0][kHeader + 16]),
              packet::load_be16(&sent[kHeader + 12]));  // the classified ethertype
}

TEST(SwitchDatapath, a_slow_destination_is_held_for_at_every_burst) {
    SwitchDatapathOptions hold_1us;
    hold_1us.hold_ns = 1000;
    hold_1us.stall_ns = 10000;
    Rig r(3, hold_1us);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[2].room = 0;  // a guest descheduled for a few holds, short of stall_ns
    for (uint64_t i = 1; i <= 3; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
        r.sw->run_turn(g_now);
        EXPECT_EQ(r[0].completed, i - 1);  // each burst is held again
        g_now += 2000;
        r.sw->run_turn(g_now);
        EXPECT_EQ(r[0].completed, i);
    }
    EXPECT_EQ(r.drops(DropReason::destination_full), 3u);
    // It takes frames again within stall_ns: nothing more is lost.
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 3u);
    r[2].room = 1;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 4u);
    EXPECT_EQ(r[2].received.size(), 1u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 3u);
}

// A receiver that takes a few frames a wake-up (a TSO guest's ring holds
// eight 64 KB frames) behind a source that has many (a VXLAN uplink's tap):
// what the hold drops was read for nothing (from a tap: copied out of the
// kernel), so the source's next bursts take only what got through, and
// what the receiver cannot take waits at the source (a tap's queue drops
// its overflow before any copy).
TEST(SwitchDatapath, a_source_whose_held_burst_was_cut_by_drops_reads_only_what_got_through) {
    SwitchDatapathOptions o;
    o.hold_ns = 1000;
    o.queue_pair.tx_batch = 32;
    Rig r(2, o);
    r.attach(0);
    r.attach(1);
    r[1].room = 4;
    for (int i = 0; i < 64; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    r.sw->run_turn(g_now);  // 32 read, 4 taken, the rest held
    g_now += 2000;
    r.sw->run_turn(g_now);  // the hold ran out: 28 dropped; the next burst is 4
    EXPECT_EQ(r.drops(DropReason::destination_full), 28u);
    EXPECT_EQ(r[0].asked, (std::vector<uint16_t>{32, 4}));
    EXPECT_EQ(r[0].pending.size(), 28u);  // left at the source, not read to be dropped
    // It takes frames again: each burst taken whole doubles the next, up to tx_batch.
    r[1].room = SIZE_MAX;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].asked, (std::vector<uint16_t>{32, 4, 4, 8, 16, 32}));
    EXPECT_EQ(r[1].received.size(), 36u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 28u);
}

TEST(SwitchDatapath, a_destination_that_took_nothing_for_stall_ns_is_not_held_for_until_it_takes) {
    SwitchDatapathOptions hold_1us;
    hold_1us.hold_ns = 1000;
    hold_1us.stall_ns = 10000;
    Rig r(3, hold_1us);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[2].room = 0;  // a guest that stopped taking RX buffers
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 0u);  // held: it has refused for 0 ns
    g_now += 20000;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 1u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 1u);
    // Stalled: the next bursts get one try each, are dropped at once, and
    // the others still receive; nothing is held, so the worker may sleep.
    for (int i = 0; i < 3; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
        r.sw->run_turn(g_now);
    }
    EXPECT_EQ(r[0].completed, 4u);
    EXPECT_EQ(r[1].received.size(), 4u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 4u);
    EXPECT_EQ(r[2].tx.drops[static_cast<size_t>(DropReason::destination_full)].get(), 4u);
    EXPECT_TRUE(r.sw->prepare_sleep([](const ports::WaitSpec&) {}));
    // It takes a frame again: it is held for once more when full.
    r[2].room = 1;
    r[0].queue(frame(kBroadcast, mac(1)));
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[2].received.size(), 1u);
    EXPECT_EQ(r[0].completed, 4u);  // the second frame is held for it
    r[2].room = 1;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[2].received.size(), 2u);
    EXPECT_EQ(r[0].completed, 6u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 4u);
}

TEST(SwitchDatapath, unicast_to_a_port_that_is_down_is_dropped_as_no_destination) {
    Rig r(3);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[2].queue(frame(kBroadcast, mac(2)));
    r.sw->run_turn(g_now);
    r[2].ready = false;
    r[0].queue(frame(mac(2), mac(1)));
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r.drops(DropReason::no_destination), 1u);
    EXPECT_EQ(r[1].received.size(), 2u);  // its flood copy, and the first broadcast
    EXPECT_EQ(r[0].completed, 2u);
}

TEST(SwitchDatapath, a_held_flood_whose_only_port_went_down_counts_as_no_destination) {
    // Two ports: a broadcast from port 0 has one copy, held while port 1's
    // ring is full; port 1 then stops its rings (a guest powering off). The
    // frame reached no port, so it is counted, once, not lost silently.
    Rig r(2);
    r.attach(0);
    r.attach(1);
    r[1].room = 0;
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 0u);  // held for port 1
    r[1].ready = false;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[0].completed, 1u);
    EXPECT_EQ(r[1].received.size(), 0u);
    EXPECT_EQ(r.drops(DropReason::no_destination), 1u);
    EXPECT_EQ(r.drops(DropReason::destination_full), 0u);
}

TEST(SwitchDatapath, a_port_detached_at_run_time_gets_nothing_more) {
    Rig r(3);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    EXPECT_TRUE(r.sw->detach(r[2]));
    EXPECT_FALSE(r.sw->detach(r[2]));
    r[0].queue(frame(kBroadcast, mac(1)));
    r[2].queue(frame(kBroadcast, mac(2)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].received.size(), 1u);
    EXPECT_TRUE(r[2].received.empty());
    EXPECT_EQ(r[2].pending.size(), 1u);  // no longer read either
    r.attach(2);
    r[0].queue(frame(kBroadcast, mac(1)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[2].received.size(), 1u);
}

// adaptive_rx: a guest is called when the switch's sources run dry, or at
// its deferral's deadline under a stream that does not.
TEST(SwitchDatapath, a_guest_fed_by_a_stream_is_called_once_the_sources_run_dry) {
    SwitchDatapathOptions o;
    o.queue_pair.weight_packets = 64;
    Rig r(2, o);
    r.attach(0);
    r.attach(1);
    EXPECT_TRUE(r[1].adaptive);
    for (int i = 0; i < 100; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    TurnResult t = r.sw->run_turn(g_now);  // out of budget: the source has more
    EXPECT_EQ(t.packets, 64u);
    EXPECT_EQ(t.wait, PathWait::none);
    EXPECT_EQ(r[1].calls, 0u);
    EXPECT_EQ(r[1].call_due, 1u + SwitchTestPort::kCallDeferNs);
    t = r.sw->run_turn(g_now);  // the last 36, then the source is dry
    EXPECT_EQ(t.packets, 36u);
    EXPECT_EQ(t.wait, PathWait::source);
    EXPECT_EQ(r[1].calls, 1u);
    EXPECT_EQ(r[1].call_due, 0u);
    EXPECT_EQ(r[1].received.size(), 100u);
    EXPECT_EQ(r[0].calls, 0u);  // it was sent nothing
}

TEST(SwitchDatapath, a_deferred_call_is_made_at_its_deadline_while_the_stream_goes_on) {
    SwitchDatapathOptions o;
    o.queue_pair.tx_batch = 8;
    o.queue_pair.weight_packets = 8;
    Rig r(2, o);
    r.attach(0);
    r.attach(1);
    for (int i = 0; i < 100; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    r.sw->run_turn(g_now);
    g_now += SwitchTestPort::kCallDeferNs - 1;
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].calls, 0u);  // not due yet, and the source has more
    g_now += 1;
    EXPECT_EQ(r.sw->run_turn(g_now).wait, PathWait::none);
    EXPECT_EQ(r[1].calls, 1u);  // due: made although the source still has more
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].call_due, g_now + SwitchTestPort::kCallDeferNs);  // a new deferral
}

TEST(SwitchDatapath, owed_calls_are_made_before_the_worker_sleeps_and_when_a_port_leaves) {
    SwitchDatapathOptions o;
    o.queue_pair.tx_batch = 4;
    o.queue_pair.weight_packets = 4;
    Rig r(3, o);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    for (int i = 0; i < 10; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].calls + r[2].calls, 0u);
    EXPECT_FALSE(r.sw->prepare_sleep([](const ports::WaitSpec&) {}));  // work is left
    EXPECT_EQ(r[1].calls, 1u);
    EXPECT_EQ(r[2].calls, 1u);
    r.sw->run_turn(g_now);
    EXPECT_TRUE(r.sw->detach(r[2]));
    EXPECT_FALSE(r[2].adaptive);  // off the switch nothing would make its calls
    EXPECT_EQ(r[2].calls, 2u);
    EXPECT_EQ(r[1].calls, 1u);  // still deferred: the source has more
}

TEST(SwitchDatapath, without_adaptive_rx_every_burst_calls) {
    SwitchDatapathOptions o;
    o.queue_pair.adaptive_rx = false;
    o.queue_pair.tx_batch = 4;
    o.queue_pair.weight_packets = 4;
    Rig r(2, o);
    r.attach(0);
    r.attach(1);
    EXPECT_FALSE(r[1].adaptive);
    for (int i = 0; i < 8; ++i) {
        r[0].queue(frame(kBroadcast, mac(1)));
    }
    r.sw->run_turn(g_now);
    r.sw->run_turn(g_now);
    EXPECT_EQ(r[1].calls, 2u);
}

TEST(SwitchDatapath, attaching_a_port_twice_is_refused) {
    Rig r(1);
    r.attach(0);
    EXPECT_THROW(r.attach(0), std::invalid_argument);
}

TEST(SwitchDatapath, a_worker_runs_its_switch_and_attaches_ports_between_rounds) {
    WorkerOptions wo;
    wo.mode = WorkerMode::poll;
    Worker worker(wo);
    worker.start();
    SwitchDatapath* sw = nullptr;
    worker.run_sync([&] {
        sw = &worker.add_engine(std::make_unique<SwitchDatapath>("s0", SwitchDatapathOptions{}));
    });
    SwitchTestPort a("a"), b("b");
    a.queue(frame(kBroadcast, mac(1)));
    worker.run_sync([&] {
        sw->attach(a, MemberConfig{});
        sw->attach(b, MemberConfig{});
    });
    size_t received = 0;
    for (int i = 0; i < 1000 && received == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        worker.run_sync([&] { received = b.received.size(); });
    }
    EXPECT_EQ(received, 1u);
    worker.run_sync([&] {
        EXPECT_TRUE(sw->detach(b));
        worker.remove_engine(sw);
    });
    EXPECT_TRUE(worker.engines().empty());
    worker.stop();
}

TEST(SwitchDatapath, forgetting_macs_of_one_member_or_all_of_them) {
    Rig r(3);
    for (size_t i = 0; i < 3; ++i) {
        r.attach(i);
    }
    r[0].queue(frame(kBroadcast, mac(1)));
    r[1].queue(frame(kBroadcast, mac(2)));
    r[1].queue(frame(kBroadcast, mac(3)));
    r[2].queue(frame(kBroadcast, mac(4)));
    r.sw->run_turn(g_now);
    ASSERT_EQ(r.sw->core().mac_table().size(), 4u);
    EXPECT_EQ(r.sw->forget_macs(r.port[1].get()), 2u);
    EXPECT_EQ(r.sw->core().mac_table().size(), 2u);
    SwitchTestPort stranger("p9");
    EXPECT_EQ(r.sw->forget_macs(&stranger), 0u);  // no member: nothing
    EXPECT_EQ(r.sw->forget_macs(nullptr), 2u);
    EXPECT_EQ(r.sw->core().mac_table().size(), 0u);
    // Unknown again: the next frame to mac(1) floods.
    r[2].queue(frame(mac(1), mac(4)));
    r.sw->run_turn(g_now);
    EXPECT_EQ(r.sw->core().counters().snapshot().flooded, 5u);
}

}  // namespace
}  // namespace vnet::dataplane::switching
