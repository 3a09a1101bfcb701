// SwitchCore as a specification: which members each packet of a burst goes
// to, and exactly which counters that moved.
#include "dataplane/switch/switch_core.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "switch_frames.hpp"

namespace vnet::dataplane::switching {
namespace {

using packet::DropReason;
using test::frame;
using test::FrameBurst;
using test::kBroadcast;
using test::mac;
constexpr uint64_t kSecond = 1000000000ull;

// The addresses of a verdict's classified Ethernet header (its prefix).
packet::MacAddress destination_of(const PacketVerdict& v) {
    packet::MacAddress m;
    std::copy_n(v.prefix.begin() + test::kHeader, m.size(), m.begin());
    return m;
}
packet::MacAddress source_of(const PacketVerdict& v) {
    packet::MacAddress m;
    std::copy_n(v.prefix.begin() + test::kHeader + 6, m.size(), m.begin());
    return m;
}

MemberConfig access(uint16_t vlan) {
    MemberConfig c;
    c.vlans.untagged = vlan;
    return c;
}

MemberConfig trunk(std::initializer_list<uint16_t> vlans,
                   std::optional<uint16_t> native = std::nullopt) {
    MemberConfig c;
    c.vlans.untagged = native;
    for (uint16_t v : vlans) {
        c.vlans.tagged.set(v);
    }
    return c;
}

struct Switch {
    explicit Switch(uint16_t members, SwitchOptions options = {}) : core(options) {
        for (uint16_t i = 0; i < members; ++i) {
            core.add_member(MemberConfig{});
        }
    }
    // The members packet `i` went to, with whether it leaves tagged.
    std::vector<std::pair<uint16_t, bool>> destinations(uint8_t i) const {
        std::vector<std::pair<uint16_t, bool>> out;
        for (uint16_t g = 0; g < plan->group_count; ++g) {
            const EgressGroup& group = plan->groups[g];
            for (uint16_t e = 0; e < group.count; ++e) {
                if (group.entries[e].packet == i) {
                    out.emplace_back(group.member, group.entries[e].tagged);
                }
            }
        }
        return out;
    }
    void send(uint16_t ingress, FrameBurst& b, uint64_t now = 0) {
        core.classify(ingress, b.burst, now, *plan);
    }
    uint64_t drops(DropReason r) const { return core.counters().snapshot().drop(r); }

    SwitchCore core;
    std::unique_ptr<BurstPlan> plan = std::make_unique<BurstPlan>();
};

using Dest = std::vector<std::pair<uint16_t, bool>>;

SwitchOptions aging(uint32_t seconds) {
    SwitchOptions o;
    o.mac_aging_s = seconds;
    return o;
}
SwitchOptions table_size(uint32_t entries) {
    SwitchOptions o;
    o.mac_table_size = entries;
    return o;
}

TEST(SwitchCore, an_unknown_destination_floods_to_every_port_but_the_ingress) {
    Switch s(4);
    FrameBurst b;
    b.add(frame(mac(9), mac(1)));
    s.send(1, b);
    EXPECT_EQ(s.destinations(0), (Dest{{0, false}, {2, false}, {3, false}}));
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.flooded, 1u);
    EXPECT_EQ(c.learned, 1u);
}

TEST(SwitchCore, broadcast_and_multicast_flood_even_when_learned) {
    Switch s(3);
    FrameBurst b;
    b.add(frame(mac(2), mac(1)));  // learns mac(1) on 0
    b.add(frame(kBroadcast, mac(1)));
    b.add(frame({0x01, 0x00, 0x5e, 0, 0, 1}, mac(1)));
    s.send(0, b);
    EXPECT_EQ(s.destinations(1), (Dest{{1, false}, {2, false}}));
    EXPECT_EQ(s.destinations(2), (Dest{{1, false}, {2, false}}));
    EXPECT_EQ(s.core.counters().snapshot().flooded, 3u);
}

TEST(SwitchCore, unicast_after_learning_goes_to_its_port_only) {
    Switch s(3);
    FrameBurst a;
    a.add(frame(kBroadcast, mac(2)));
    s.send(2, a);  // mac(2) is behind member 2
    FrameBurst b;
    b.add(frame(mac(2), mac(1)));
    s.send(0, b);
    EXPECT_EQ(s.destinations(0), (Dest{{2, false}}));
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.learned, 2u);
    EXPECT_EQ(c.flooded, 1u);
}

TEST(SwitchCore, a_burst_is_grouped_per_destination_in_burst_order) {
    Switch s(3);
    FrameBurst learn;
    learn.add(frame(kBroadcast, mac(1)));
    s.send(1, learn);
    learn = FrameBurst{};
    learn.add(frame(kBroadcast, mac(2)));
    s.send(2, learn);
    FrameBurst b;
    b.add(frame(mac(1), mac(10)));
    b.add(frame(mac(2), mac(10)));
    b.add(frame(mac(1), mac(10)));
    s.send(0, b);
    ASSERT_EQ(s.plan->group_count, 2u);
    EXPECT_EQ(s.plan->groups[0].member, 1u);
    ASSERT_EQ(s.plan->groups[0].count, 2u);
    EXPECT_EQ(s.plan->groups[0].entries[0].packet, 0u);
    EXPECT_EQ(s.plan->groups[0].entries[1].packet, 2u);
    EXPECT_EQ(s.plan->groups[1].member, 2u);
    EXPECT_EQ(s.plan->groups[1].count, 1u);
}

TEST(SwitchCore, a_run_of_one_flow_is_decided_once_and_counted_per_frame) {
    Switch s(3);
    FrameBurst b;
    for (int i = 0; i < 4; ++i) {
        b.add(frame(mac(9), mac(1)));
    }
    s.send(1, b);
    for (uint8_t i = 0; i < 4; ++i) {
        EXPECT_EQ(s.destinations(i), (Dest{{0, false}, {2, false}})) << int{i};
    }
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.flooded, 4u);
    EXPECT_EQ(c.learned, 1u);
    EXPECT_EQ(s.core.mac_table().size(), 1u);
}

TEST(SwitchCore, a_frame_after_a_different_one_is_decided_again) {
    Switch s(3);
    FrameBurst b;
    b.add(frame(mac(2), mac(1)));  // mac(2) unknown: flooded; mac(1) learned on 0
    b.add(frame(mac(1), mac(2)));  // mac(2) learned on 0; mac(1) is behind 0: nowhere
    b.add(frame(mac(2), mac(1)));  // as the first, but mac(2) is now behind 0: nowhere
    s.send(0, b);
    EXPECT_EQ(s.destinations(0), (Dest{{1, false}, {2, false}}));
    EXPECT_TRUE(s.destinations(1).empty());
    EXPECT_TRUE(s.destinations(2).empty());
    EXPECT_EQ(s.drops(DropReason::no_destination), 2u);
    EXPECT_EQ(s.core.counters().snapshot().flooded, 1u);
}

// Flows interleaved frame by frame (no run to reuse): each source is learned
// once per burst and each destination looked up once, with the same plan
// and counters as one frame at a time.
TEST(SwitchCore, interleaved_flows_are_learned_and_routed_as_frame_by_frame) {
    Switch together(3);
    Switch alone(3);
    FrameBurst known;
    known.add(frame(kBroadcast, mac(9)));
    together.send(2, known);
    alone.send(2, known);
    std::vector<std::vector<uint8_t>> frames;
    for (int i = 0; i < 12; ++i) {
        frames.push_back(frame(i % 4 == 3 ? mac(8) : mac(9), mac(static_cast<uint8_t>(1 + i % 3))));
    }
    FrameBurst b;
    for (const auto& f : frames) {
        b.add(f);
    }
    together.send(0, b, 5);
    for (uint8_t i = 0; i < frames.size(); ++i) {
        FrameBurst one;
        one.add(frames[i]);
        alone.send(0, one, 5);
        Dest got = together.destinations(i);
        std::sort(got.begin(), got.end());  // groups are in the order the burst opened them
        EXPECT_EQ(got, alone.destinations(0)) << int{i};
        EXPECT_EQ(got, i % 4 == 3 ? (Dest{{1, false}, {2, false}}) : (Dest{{2, false}})) << int{i};
    }
    const auto c = together.core.counters().snapshot();
    const auto a = alone.core.counters().snapshot();
    EXPECT_EQ(c.learned, 4u);
    EXPECT_EQ(c.learned, a.learned);
    EXPECT_EQ(c.flooded, a.flooded);
    EXPECT_EQ(c.moved, 0u);
}

// A destination looked up earlier in the burst that a later frame's source
// moves to the ingress port: the frames after that go nowhere.
TEST(SwitchCore, a_destination_that_moves_mid_burst_is_routed_where_it_went) {
    Switch s(3);
    FrameBurst known;
    known.add(frame(kBroadcast, mac(9)));
    s.send(2, known);
    FrameBurst b;
    b.add(frame(mac(9), mac(1)));  // to 2
    b.add(frame(mac(4), mac(9)));  // mac(9) moves to 0
    b.add(frame(mac(9), mac(1)));  // behind its own port now: nowhere
    s.send(0, b);
    EXPECT_EQ(s.destinations(0), (Dest{{2, false}}));
    EXPECT_EQ(s.destinations(1), (Dest{{2, false}, {1, false}}));  // 2's group came first
    EXPECT_TRUE(s.destinations(2).empty());
    EXPECT_EQ(s.core.counters().snapshot().moved, 1u);
    EXPECT_EQ(s.drops(DropReason::no_destination), 1u);
}

TEST(SwitchCore, a_run_from_a_source_a_full_table_refused_counts_every_frame) {
    Switch s(2, table_size(1));
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));  // takes the one entry
    for (int i = 0; i < 3; ++i) {
        b.add(frame(kBroadcast, mac(2)));
    }
    s.send(0, b);
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.learned, 1u);
    EXPECT_EQ(c.table_full, 3u);
    EXPECT_EQ(c.flooded, 4u);
    for (uint8_t i = 0; i < 4; ++i) {
        EXPECT_EQ(s.destinations(i), (Dest{{1, false}})) << int{i};
    }
}

TEST(SwitchCore, a_run_of_dropped_frames_is_decided_and_counted_frame_by_frame) {
    SwitchCore core;
    MemberConfig guarded;
    guarded.allowed_macs = {mac(1)};
    guarded.vlans.untagged = 10;
    core.add_member(guarded);
    core.add_member(access(10));
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    for (int i = 0; i < 3; ++i) {
        b.add(frame(kBroadcast, mac(66)));  // spoofed
    }
    for (int i = 0; i < 2; ++i) {
        b.add(frame(kBroadcast, mac(1), 20));  // VLAN 20 is not the port's
    }
    for (int i = 0; i < 2; ++i) {
        b.add(frame(kBroadcast, mac(1)));  // allowed, after a run of refused ones
    }
    core.classify(0, b.burst, 0, *plan);
    auto c = core.counters().snapshot();
    EXPECT_EQ(c.drop(DropReason::spoofed), 3u);
    EXPECT_EQ(c.drop(DropReason::vlan_not_allowed), 2u);
    EXPECT_EQ(c.learned, 1u);
    EXPECT_EQ(c.flooded, 2u);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_EQ(plan->groups[0].member, 1u);
    ASSERT_EQ(plan->groups[0].count, 2u);
    EXPECT_EQ(plan->groups[0].entries[0].packet, 5u);
    EXPECT_EQ(plan->groups[0].entries[1].packet, 6u);
    EXPECT_EQ(plan->packets[6].vlan, 10u);
    EXPECT_EQ(source_of(plan->packets[6]), mac(1));
}

TEST(SwitchCore, a_frame_too_short_to_switch_breaks_a_run) {
    Switch s(3);
    FrameBurst b;
    b.add(frame(mac(9), mac(1)));
    b.add(std::vector<uint8_t>(test::kHeader + 13, 0));
    b.add(frame(mac(9), mac(1)));
    b.add(frame(mac(9), mac(1)));
    s.send(1, b);
    EXPECT_EQ(s.drops(DropReason::packet_too_short), 1u);
    EXPECT_TRUE(s.destinations(1).empty());
    for (uint8_t i : {0, 2, 3}) {
        EXPECT_EQ(s.destinations(i), (Dest{{0, false}, {2, false}})) << int{i};
        EXPECT_EQ(destination_of(s.plan->packets[i]), mac(9)) << int{i};
    }
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.flooded, 3u);
    EXPECT_EQ(c.learned, 1u);
}

TEST(SwitchCore, a_mac_moving_to_another_port_is_followed_and_counted) {
    Switch s(3);
    FrameBurst a;
    a.add(frame(kBroadcast, mac(5)));
    s.send(1, a);
    FrameBurst b;
    b.add(frame(kBroadcast, mac(5)));
    s.send(2, b, kSecond);
    FrameBurst c;
    c.add(frame(mac(5), mac(7)));
    s.send(0, c, 2 * kSecond);
    EXPECT_EQ(s.destinations(0), (Dest{{2, false}}));
    EXPECT_EQ(s.core.counters().snapshot().moved, 1u);
}

TEST(SwitchCore, a_mac_ages_out_with_the_clock_and_is_flooded_to_again) {
    Switch s(3, aging(10));
    FrameBurst a;
    a.add(frame(kBroadcast, mac(5)));
    s.send(1, a, 0);
    FrameBurst b;
    b.add(frame(mac(5), mac(7)));
    s.send(0, b, 9 * kSecond);
    EXPECT_EQ(s.destinations(0), (Dest{{1, false}}));
    // mac(7) was learned at 9 s; at 10 s mac(5) is 10 s old: gone.
    s.send(0, b, 10 * kSecond);
    EXPECT_EQ(s.destinations(0), (Dest{{1, false}, {2, false}}));
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.aged, 1u);
    EXPECT_EQ(c.flooded, 2u);
    EXPECT_EQ(s.core.mac_table().size(), 1u);
}

TEST(SwitchCore, the_once_a_second_sweep_ages_macs_nobody_asks_for) {
    Switch s(2, aging(5));
    FrameBurst a;
    a.add(frame(kBroadcast, mac(5)));
    s.send(1, a, 0);
    FrameBurst b;
    b.add(frame(kBroadcast, mac(6)));
    s.send(0, b, 6 * kSecond);  // the sweep runs before learning mac(6)
    EXPECT_EQ(s.core.counters().snapshot().aged, 1u);
    EXPECT_EQ(s.core.mac_table().size(), 1u);
}

TEST(SwitchCore, a_full_table_floods_instead_of_growing) {
    Switch s(3, table_size(2));
    FrameBurst a;
    a.add(frame(kBroadcast, mac(1)));
    a.add(frame(kBroadcast, mac(2)));
    a.add(frame(kBroadcast, mac(3)));
    s.send(1, a);
    FrameBurst b;
    b.add(frame(mac(3), mac(1)));
    s.send(0, b);
    EXPECT_EQ(s.destinations(0), (Dest{{1, false}, {2, false}}));
    auto c = s.core.counters().snapshot();
    EXPECT_EQ(c.learned, 2u);
    // mac(3) found no room; mac(1) seen on member 0 is a move, not a new entry.
    EXPECT_EQ(c.table_full, 1u);
    EXPECT_EQ(c.moved, 1u);
    EXPECT_EQ(s.core.mac_table().size(), 2u);
}

TEST(SwitchCore, a_frame_for_a_mac_behind_its_own_port_goes_nowhere) {
    Switch s(2);
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));
    b.add(frame(mac(1), mac(2)));
    s.send(0, b);
    EXPECT_TRUE(s.destinations(1).empty());
    EXPECT_EQ(s.drops(DropReason::no_destination), 1u);
}

TEST(SwitchCore, a_switch_of_one_port_drops_a_flood_as_no_destination) {
    Switch s(1);
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));
    s.send(0, b);
    EXPECT_EQ(s.plan->group_count, 0u);
    EXPECT_EQ(s.drops(DropReason::no_destination), 1u);
    EXPECT_EQ(s.core.counters().snapshot().flooded, 0u);
}

TEST(SwitchCore, access_ports_switch_only_within_their_vlan) {
    SwitchCore core;
    core.add_member(access(10));  // 0
    core.add_member(access(10));  // 1
    core.add_member(access(20));  // 2
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));
    core.classify(0, b.burst, 0, *plan);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_EQ(plan->groups[0].member, 1u);
    EXPECT_FALSE(plan->groups[0].entries[0].tagged);
    EXPECT_EQ(plan->packets[0].vlan, 10u);
}

TEST(SwitchCore, an_access_port_tags_toward_a_trunk_and_the_trunk_untags_toward_it) {
    SwitchCore core;
    core.add_member(access(10));       // 0
    core.add_member(trunk({10, 20}));  // 1
    core.add_member(access(20));       // 2
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst up;
    up.add(frame(kBroadcast, mac(1)));
    core.classify(0, up.burst, 0, *plan);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_EQ(plan->groups[0].member, 1u);
    EXPECT_TRUE(plan->groups[0].entries[0].tagged);

    FrameBurst down;
    down.add(frame(kBroadcast, mac(2), 20));
    core.classify(1, down.burst, 0, *plan);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_EQ(plan->groups[0].member, 2u);
    EXPECT_FALSE(plan->groups[0].entries[0].tagged);
    EXPECT_TRUE(plan->packets[0].tagged);
    EXPECT_EQ(plan->packets[0].vlan, 20u);
}

TEST(SwitchCore, a_tagged_frame_on_a_vlan_its_port_does_not_carry_is_dropped_and_counted) {
    SwitchCore core;
    core.add_member(trunk({10}));  // 0
    core.add_member(trunk({10}));  // 1
    core.add_member(access(10));   // 2
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1), 30));  // trunk, VLAN 30 not allowed
    b.add(frame(kBroadcast, mac(1)));      // trunk without a native VLAN: untagged refused
    b.add(frame(kBroadcast, mac(1), 10));  // allowed
    core.classify(0, b.burst, 0, *plan);
    auto c = core.counters().snapshot();
    EXPECT_EQ(c.drop(DropReason::vlan_not_allowed), 2u);
    EXPECT_EQ(c.flooded, 1u);
    FrameBurst at_access;
    at_access.add(frame(kBroadcast, mac(3), 20));  // access port of 10, tagged 20
    core.classify(2, at_access.burst, 0, *plan);
    EXPECT_EQ(core.counters().snapshot().drop(DropReason::vlan_not_allowed), 3u);
}

TEST(SwitchCore, a_trunks_native_vlan_travels_untagged_on_it) {
    SwitchCore core;
    core.add_member(trunk({20}, 10));  // 0
    core.add_member(access(10));       // 1
    core.add_member(trunk({10}));      // 2
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));
    core.classify(0, b.burst, 0, *plan);
    EXPECT_EQ(plan->packets[0].vlan, 10u);
    ASSERT_EQ(plan->group_count, 2u);
    EXPECT_FALSE(plan->groups[0].entries[0].tagged);
    EXPECT_TRUE(plan->groups[1].entries[0].tagged);
}

TEST(SwitchCore, a_priority_tag_counts_as_untagged) {
    SwitchCore core;
    core.add_member(access(10));
    core.add_member(access(10));
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1), 0x6000));  // PCP 3, VID 0
    core.classify(0, b.burst, 0, *plan);
    EXPECT_EQ(plan->packets[0].vlan, 10u);
    EXPECT_TRUE(plan->packets[0].tagged);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_FALSE(plan->groups[0].entries[0].tagged);
}

TEST(SwitchCore, a_port_with_allowed_macs_may_send_only_from_them) {
    SwitchCore core;
    MemberConfig guarded;
    guarded.allowed_macs = {mac(1)};
    core.add_member(guarded);
    core.add_member(MemberConfig{});
    auto plan = std::make_unique<BurstPlan>();
    FrameBurst b;
    b.add(frame(kBroadcast, mac(1)));
    b.add(frame(kBroadcast, mac(66)));
    b.add(frame(mac(1), mac(66)));
    core.classify(0, b.burst, 0, *plan);
    auto c = core.counters().snapshot();
    EXPECT_EQ(c.drop(DropReason::spoofed), 2u);
    EXPECT_EQ(c.learned, 1u);  // a spoofed source is never learned
    EXPECT_EQ(c.flooded, 1u);
    ASSERT_EQ(plan->group_count, 1u);
    EXPECT_EQ(plan->groups[0].count, 1u);
}

TEST(SwitchCore, a_group_or_zero_source_is_dropped_and_never_learned) {
    Switch s(2);
    FrameBurst b;
    b.add(frame(kBroadcast, kBroadcast));
    b.add(frame(kBroadcast, packet::MacAddress{}));
    s.send(0, b);
    EXPECT_EQ(s.drops(DropReason::invalid_source_mac), 2u);
    EXPECT_EQ(s.core.mac_table().size(), 0u);
}

TEST(SwitchCore, frames_shorter_than_their_headers_are_dropped_as_too_short) {
    Switch s(2);
    FrameBurst b;
    std::vector<uint8_t> tagged = frame(kBroadcast, mac(1), 10, 0);
    b.add(std::vector<uint8_t>(tagged.begin(), tagged.begin() + test::kHeader + 15));
    b.add(std::vector<uint8_t>(test::kHeader + 13, 0));
    b.add(std::vector<uint8_t>(4, 0));
    s.send(0, b);
    EXPECT_EQ(s.drops(DropReason::packet_too_short), 3u);
    EXPECT_EQ(s.plan->group_count, 0u);
}

TEST(SwitchCore, a_removed_member_gets_nothing_and_its_macs_are_forgotten) {
    Switch s(3);
    FrameBurst a;
    a.add(frame(kBroadcast, mac(2)));
    s.send(2, a);
    s.core.remove_member(2);
    EXPECT_EQ(s.core.mac_table().size(), 0u);
    FrameBurst b;
    b.add(frame(mac(2), mac(1)));
    s.send(0, b);
    EXPECT_EQ(s.destinations(0), (Dest{{1, false}}));
    EXPECT_EQ(s.core.add_member(MemberConfig{}), 2u);  // the id is reused
}

}  // namespace
}  // namespace vnet::dataplane::switching
