// SwitchCore: the pure L2 learning switch (no syscalls, no ports): members
// with their VLANs and allowed source MACs, the MAC table, the counters, and
// classify(), which turns a whole burst from one ingress member into one
// group of packets per destination member. The datapath
// (switch_datapath.hpp) hands each group to its port; this part decides.
//
// Per packet, in order (each drop counted by its reason, never silent):
//  1. parse Ethernet + optional 802.1Q, lengths checked: packet_too_short;
//  2. the frame's VLAN from the ingress member's membership: vlan_not_allowed;
//  3. a group or all-zero source: invalid_source_mac;
//  4. anti-spoofing (a member given allowed MACs): spoofed;
//  5. learn the source on (VLAN, member);
//  6. a group destination, or a unicast one not in the table: flood to every
//     other member carrying the VLAN; a known one: to its member only
//     (none left, or the frame's own port: no_destination).
// Each destination entry says whether the frame leaves tagged, so the
// datapath adds, strips or keeps the tag.
//
// One thread owns a SwitchCore (the switch's worker): no locks.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/switch/frame_parser.hpp"
#include "dataplane/switch/mac_table.hpp"
#include "dataplane/switch/switch_counters.hpp"
#include "dataplane/switch/vlan_membership.hpp"
#include "packet/packet_burst.hpp"

namespace vnet::dataplane::switching {

// Linux bridge ageing_time, and DESIGN.md's table bound.
inline constexpr uint32_t kDefaultMacAgingSeconds = 300;
inline constexpr uint32_t kDefaultMacTableSize = 8192;
// Ports per switch: a bound so that a burst's plan is a fixed array (each
// ingress queue keeps its own while a destination is full).
inline constexpr uint16_t kMaxSwitchMembers = 64;
static_assert(kMaxSwitchMembers <= MacTable::kMaxMembers, "the MAC table numbers every member");

struct SwitchOptions {
    uint32_t mac_aging_s = kDefaultMacAgingSeconds;
    uint32_t mac_table_size = kDefaultMacTableSize;
};

struct MemberConfig {
    VlanMembership vlans;
    // Anti-spoofing: when not empty, the only source MACs the member may send from.
    std::vector<packet::MacAddress> allowed_macs;
};

// What classify() found for one packet of the burst.
struct PacketVerdict {
    uint16_t vlan = 0;    // the VLAN it travels in
    uint16_t tci = 0;     // its tag as it arrived, when tagged
    bool tagged = false;  // it arrived with an 802.1Q tag (a priority tag too)
    // Its copies (0: no destination; a unicast frame has one), and how many
    // found their port down at delivery: when every copy did, the frame
    // reached no port and counts as no_destination.
    uint16_t copies = 0;
    uint16_t copies_to_ports_down = 0;
    // Its virtio-net header, Ethernet header and tag as classified (the
    // parser's private copy, parse_l2_frame), which is what leaves: the
    // sender may rewrite its buffer after the decision (a held burst waits
    // up to destination_hold_us), and a source MAC or a tag it then writes
    // must not get past anti-spoofing or VLAN membership. A frame that
    // leaves tagged as it came is sent from here as it is.
    L2Prefix prefix{};
};

struct EgressEntry {
    uint8_t packet;  // index in the burst
    bool tagged;     // leaves with a tag of its VLAN
};

struct EgressGroup {
    uint16_t member = 0;
    uint16_t count = 0;
    std::array<EgressEntry, packet::kMaxBurstPackets> entries{};
};

// One burst's decisions: per packet, and per destination member the packets
// that go there, in burst order. Reused for every burst (no allocation).
struct BurstPlan {
    std::array<PacketVerdict, packet::kMaxBurstPackets> packets{};
    std::array<EgressGroup, kMaxSwitchMembers> groups{};
    uint16_t group_count = 0;
    // member -> 1 + its group's index, 0 when it has none (reset per burst).
    std::array<uint16_t, kMaxSwitchMembers> group_of{};
};

class SwitchCore {
public:
    explicit SwitchCore(const SwitchOptions& options = {});

    // The new member's id (the smallest free one); throws std::length_error
    // when the switch has kMaxSwitchMembers already.
    uint16_t add_member(MemberConfig config);
    // The member leaves: its MACs are forgotten, its id may be reused.
    void remove_member(uint16_t member);
    bool has_member(uint16_t member) const {
        return member < members_.size() && members_[member].active;
    }
    const MemberConfig& member_config(uint16_t member) const { return members_[member].config; }

    // Classifies burst.count packets that arrived on `ingress` at `now_ns`
    // (a monotonic clock) into `plan`. Once a second of `now_ns` it also
    // sweeps the MAC table for expired entries.
    void classify(uint16_t ingress, const packet::PacketBurst& burst, uint64_t now_ns,
                  BurstPlan& plan);

    const SwitchCounters& counters() const { return counters_; }
    SwitchCounters& counters() { return counters_; }
    const MacTable& mac_table() const { return table_; }
    MacTable& mac_table() { return table_; }
    const SwitchOptions& options() const { return options_; }

private:
    struct Member {
        MemberConfig config;
        bool active = false;
    };
    // Where an admitted frame goes: decided from its destination and VLAN.
    struct Route {
        enum class Kind : uint8_t { flood, unicast, none } kind = Kind::none;
        bool tagged = false;  // unicast: leaves with a tag
        uint16_t to = 0;      // unicast: the member
    };
    // One frame of the burst as the first pass leaves it.
    struct ParsedFrame {
        L2Frame frame;
        bool parsed = false;  // false: too short to switch
        bool repeat = false;  // the same Ethernet header as the frame before it
        // The VLAN it travels in (VlanMembership::kNotCarried: the ingress
        // member does not carry it) and its addresses' table keys there.
        uint16_t vlan = 0;
        MacTable::Key source_key = 0;
        MacTable::Key destination_key = 0;
    };
    // The first pass: parses the burst into parsed_, finds each header's
    // VLAN and table keys, and starts fetching the table slots the keys
    // live in. A burst from many sources (a switch that learned thousands
    // of MACs) then waits for its cache misses together, not one frame
    // after another.
    // Each frame's first bytes are copied into its verdict in `plan`.
    void parse_burst(uint16_t ingress, const packet::PacketBurst& burst, BurstPlan& plan);
    // Forgets the burst's learned sources and route (start of classify).
    void reset_burst_memo();
    // Its source was admitted and learned earlier in this burst.
    bool admitted_this_burst(const ParsedFrame& p) const;
    static size_t memo_slot(MacTable::Key key) {
        return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - kLearnedMemoBits));
    }
    // Steps 2-5 for one frame: its source learned (*learned: it is in the
    // table now); false when it is dropped (counted).
    // Inline: once per frame whose source the burst has not seen yet (every
    // frame, from a switch's thousands of sources), where the call and
    // `learned` through memory cost ~15 of its ~70 instructions.
    [[gnu::always_inline]] bool admit(uint16_t ingress, const ParsedFrame& p, uint64_t now,
                                      bool* learned);
    Route route(uint16_t ingress, const ParsedFrame& p, uint64_t now);
    Route lookup_route(uint16_t ingress, const ParsedFrame& p, uint64_t now);
    // The last decision a frame after it may repeat (classify's `last`).
    struct Decided {
        Route route;
        bool valid = false;
    };
    // classify's frames one at a time, from parsed_[from] on, until one a
    // run takes (known_frame, after a frame decided without the table) or
    // `count`; returns where it stopped. Out of line, so that the run's
    // call is not in its loop (its values would not stay in registers).
    [[gnu::noinline]] uint16_t classify_frames(uint16_t ingress, uint16_t count, uint64_t now_ns,
                                               uint16_t from, BurstPlan& plan, Decided& decided);
    // classify's common frames, from parsed_[from] until `count`: each one
    // parsed, its source admitted and learned earlier in this burst (the
    // memo: admission and learning would change nothing), its destination
    // the unicast one whose route the burst looked up last (a lookup would
    // answer the same). Each gets its verdict and goes to that route's
    // member; returns the frame it stopped at. A loop with nothing else in
    // it, so that its values stay in registers.
    [[gnu::noinline]] uint16_t classify_known_run(uint16_t from, uint16_t count, BurstPlan& plan);
    // The frame is such a frame, `routed_key` and `routed` the burst's last
    // lookup (routed_key_ and routed_; the key is 0, never a key, before it).
    bool known_frame(const ParsedFrame& p, MacTable::Key routed_key, Route routed) const;
    // Inline: once per copy of a frame (out of line, the call was a third of it).
    [[gnu::always_inline]] void send(BurstPlan& plan, uint16_t member, uint8_t packet, bool tagged);
    void flood(BurstPlan& plan, uint16_t ingress, uint8_t packet);

    SwitchOptions options_;
    SwitchCounters counters_;
    MacTable table_;
    std::vector<Member> members_;
    std::vector<uint16_t> active_;  // ids of active members, in id order (flood order)
    uint64_t next_sweep_ns_ = 0;
    // The burst being classified, after the first pass.
    std::array<ParsedFrame, packet::kMaxBurstPackets> parsed_{};
    // What one burst already decided, so that frames of several flows
    // interleaved (a run check only sees the frame before) are not looked
    // up again. Valid for one classify: one ingress, one `now`, and no
    // table change but its own learning.
    //  * Sources admitted and learned at this `now` on this ingress,
    //    direct-mapped by key (0, never a key, is empty): admission
    //    depends only on the ingress, the source and its VLAN, and
    //    learning one again would change nothing (same member, same time).
    //  * The last unicast destination's route: a lookup at the same `now`
    //    answers the same until that key itself is learned (moved or
    //    added), which forgets it.
    static constexpr unsigned kLearnedMemoBits = 6;  // a slot per frame of a full burst
    std::array<MacTable::Key, size_t{1} << kLearnedMemoBits> learned_memo_{};
    MacTable::Key routed_key_ = 0;
    Route routed_;
};

}  // namespace vnet::dataplane::switching
