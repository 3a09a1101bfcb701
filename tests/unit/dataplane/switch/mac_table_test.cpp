// The MAC table as a specification: bounded, aging, moving, deletion that
// keeps every other entry findable.
#include "dataplane/switch/mac_table.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "switch_frames.hpp"

namespace vnet::dataplane::switching {
namespace {

using test::mac;
constexpr uint64_t kSecond = 1000000000ull;

TEST(MacTable, learns_a_source_and_finds_it_on_its_vlan_only) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    t.learn(mac(1), 1, 3, 0);
    EXPECT_EQ(t.lookup(mac(1), 1, 0), 3u);
    EXPECT_EQ(t.lookup(mac(1), 2, 0), MacTable::kUnknown);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(c.snapshot().learned, 1u);
}

TEST(MacTable, lists_each_entry_with_its_mac_vlan_member_and_age) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    const packet::MacAddress m{0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
    t.learn(m, 4094, MacTable::kMaxMembers - 1, 5 * kSecond);
    t.learn(mac(1), 1, 0, 6 * kSecond);
    std::vector<MacTable::Entry> seen;
    t.for_each(7 * kSecond + 3, [&](const MacTable::Entry& e) { seen.push_back(e); });
    ASSERT_EQ(seen.size(), 2u);
    if (seen[0].vlan != 4094) {
        std::swap(seen[0], seen[1]);
    }
    EXPECT_EQ(seen[0].mac, m);
    EXPECT_EQ(seen[0].vlan, 4094u);
    EXPECT_EQ(seen[0].member, MacTable::kMaxMembers - 1);
    EXPECT_EQ(seen[0].age_ns, 2 * kSecond + 3);
    EXPECT_EQ(seen[1].mac, mac(1));
    EXPECT_EQ(seen[1].vlan, 1u);
    EXPECT_EQ(seen[1].member, 0u);
    EXPECT_EQ(seen[1].age_ns, kSecond + 3);
}

TEST(MacTable, ages_are_exact_across_the_wrap_of_its_56_bit_clock) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    const uint64_t wrap = uint64_t{1} << 56;
    t.learn(mac(1), 1, 3, wrap - kSecond);
    EXPECT_EQ(t.lookup(mac(1), 1, wrap + 299 * kSecond - 1), 3u);
    EXPECT_EQ(t.lookup(mac(1), 1, wrap + 299 * kSecond), MacTable::kUnknown);
    EXPECT_EQ(c.snapshot().aged, 1u);
}

TEST(MacTable, an_aging_time_it_cannot_keep_is_refused) {
    SwitchCounters c;
    EXPECT_THROW(MacTable(8, 0, c), std::invalid_argument);
    EXPECT_THROW(MacTable(8, MacTable::kMaxAgingNs + 1, c), std::invalid_argument);
    EXPECT_NO_THROW(MacTable(8, MacTable::kMaxAgingNs, c));
}

TEST(MacTable, relearning_on_the_same_port_is_no_event) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    t.learn(mac(1), 1, 3, 0);
    t.learn(mac(1), 1, 3, kSecond);
    EXPECT_EQ(c.snapshot().learned, 1u);
    EXPECT_EQ(c.snapshot().moved, 0u);
}

TEST(MacTable, a_mac_seen_on_another_port_moves_there) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    t.learn(mac(1), 1, 3, 0);
    t.learn(mac(1), 1, 4, kSecond);
    EXPECT_EQ(t.lookup(mac(1), 1, kSecond), 4u);
    EXPECT_EQ(c.snapshot().moved, 1u);
    EXPECT_EQ(t.size(), 1u);
}

TEST(MacTable, an_entry_expires_exactly_at_the_aging_time) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    t.learn(mac(1), 1, 3, 10 * kSecond);
    EXPECT_NE(t.lookup(mac(1), 1, 310 * kSecond - 1), MacTable::kUnknown);
    EXPECT_EQ(t.lookup(mac(1), 1, 310 * kSecond), MacTable::kUnknown);
    EXPECT_EQ(c.snapshot().aged, 1u);
    EXPECT_EQ(t.size(), 0u);
}

TEST(MacTable, traffic_refreshes_an_entry) {
    SwitchCounters c;
    MacTable t(8, 300 * kSecond, c);
    t.learn(mac(1), 1, 3, 0);
    t.learn(mac(1), 1, 3, 200 * kSecond);
    EXPECT_NE(t.lookup(mac(1), 1, 450 * kSecond), MacTable::kUnknown);
    EXPECT_EQ(c.snapshot().aged, 0u);
}

TEST(MacTable, a_sweep_forgets_every_expired_entry_and_keeps_the_rest) {
    SwitchCounters c;
    MacTable t(64, 300 * kSecond, c);
    for (uint8_t i = 0; i < 40; ++i) {
        t.learn(mac(i), 1, i, i % 2 == 0 ? 0 : 100 * kSecond);
    }
    t.age(300 * kSecond);
    EXPECT_EQ(c.snapshot().aged, 20u);
    EXPECT_EQ(t.size(), 20u);
    for (uint8_t i = 0; i < 40; ++i) {
        EXPECT_EQ(t.lookup(mac(i), 1, 300 * kSecond) != MacTable::kUnknown, i % 2 == 1) << int(i);
    }
}

TEST(MacTable, a_full_table_does_not_grow_and_counts_what_it_could_not_learn) {
    SwitchCounters c;
    MacTable t(4, 300 * kSecond, c);
    for (uint8_t i = 0; i < 6; ++i) {
        t.learn(mac(i), 1, 0, 0);
    }
    EXPECT_EQ(t.size(), 4u);
    EXPECT_EQ(c.snapshot().learned, 4u);
    EXPECT_EQ(c.snapshot().table_full, 2u);
    EXPECT_EQ(t.lookup(mac(5), 1, 0), MacTable::kUnknown);
    // Once an entry ages out there is room again.
    t.learn(mac(0), 1, 0, 0);
    t.age(300 * kSecond);
    t.learn(mac(5), 1, 0, 300 * kSecond);
    EXPECT_NE(t.lookup(mac(5), 1, 300 * kSecond), MacTable::kUnknown);
}

TEST(MacTable, forgetting_a_member_keeps_the_others_findable) {
    SwitchCounters c;
    MacTable t(1024, 300 * kSecond, c);
    for (uint16_t i = 0; i < 1000; ++i) {
        packet::MacAddress m{0x02, 0, 0, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        t.learn(m, 1, i % 3, 0);
    }
    t.forget_member(1);
    EXPECT_EQ(t.size(), 1000u - 333u);
    for (uint16_t i = 0; i < 1000; ++i) {
        packet::MacAddress m{0x02, 0, 0, 0, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
        EXPECT_EQ(t.lookup(m, 1, 0) != MacTable::kUnknown, i % 3 != 1) << i;
    }
    EXPECT_EQ(c.snapshot().aged, 0u);
}

TEST(MacTable, forgetting_all_empties_it_and_it_learns_again) {
    SwitchCounters c;
    MacTable t(1024, 300 * kSecond, c);
    for (uint16_t i = 0; i < 100; ++i) {
        t.learn(mac(i), 1, i % 3, 0);
    }
    t.forget_all();
    EXPECT_EQ(t.size(), 0u);
    for (uint16_t i = 0; i < 100; ++i) {
        EXPECT_EQ(t.lookup(mac(i), 1, 0), MacTable::kUnknown) << i;
    }
    EXPECT_EQ(c.snapshot().aged, 0u);
    EXPECT_TRUE(t.learn(mac(7), 1, 2, 0));
    EXPECT_EQ(t.lookup(mac(7), 1, 0), 2u);
}

}  // namespace
}  // namespace vnet::dataplane::switching
