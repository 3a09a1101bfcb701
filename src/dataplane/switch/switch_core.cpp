#include "dataplane/switch/switch_core.hpp"

#include <algorithm>
#include <stdexcept>

#include "dataplane/switch/frame_parser.hpp"
#include "dataplane/switch/mac_address.hpp"

namespace vnet::dataplane::switching {

namespace {
constexpr uint64_t kNsPerSecond = 1000000000ull;
// How often the MAC table is swept: aging is in seconds, so is this.
constexpr uint64_t kSweepIntervalNs = kNsPerSecond;
}  // namespace

SwitchCore::SwitchCore(const SwitchOptions& options)
    : options_(options),
      table_(options.mac_table_size, uint64_t{options.mac_aging_s} * kNsPerSecond, counters_) {
    members_.reserve(kMaxSwitchMembers);
    active_.reserve(kMaxSwitchMembers);
}

uint16_t SwitchCore::add_member(MemberConfig config) {
    uint16_t id = 0;
    while (id < members_.size() && members_[id].active) {
        ++id;
    }
    if (id == kMaxSwitchMembers) {
        throw std::length_error("a switch has at most " + std::to_string(kMaxSwitchMembers) +
                                " ports");
    }
    if (id == members_.size()) {
        members_.emplace_back();
    }
    members_[id] = Member{std::move(config), true};
    active_.insert(std::upper_bound(active_.begin(), active_.end(), id), id);
    return id;
}

void SwitchCore::remove_member(uint16_t member) {
    if (!has_member(member)) {
        return;
    }
    members_[member] = Member{};
    active_.erase(std::find(active_.begin(), active_.end(), member));
    table_.forget_member(member);
}

void SwitchCore::parse_burst(uint16_t ingress, const packet::PacketBurst& burst, BurstPlan& plan) {
    const VlanMembership& vlans = members_[ingress].config.vlans;
    const ParsedFrame* previous = nullptr;
    for (uint16_t i = 0; i < burst.count; ++i) {
        ParsedFrame& p = parsed_[i];
        p.parsed = parse_l2_frame(burst.packet_iovecs(i), burst.packets[i].len, burst.header_size,
                                  p.frame, plan.packets[i].prefix);
        if (!p.parsed) {
            previous = nullptr;
            continue;
        }
        p.repeat = previous != nullptr && same_l2_header(p.frame, previous->frame);
        if (p.repeat) {
            p.vlan = previous->vlan;
            p.source_key = previous->source_key;
            p.destination_key = previous->destination_key;
        } else {
            p.vlan = vlans.ingress_vlan(p.frame.tagged ? p.frame.tci & kVlanIdMask : 0);
            if (p.vlan != VlanMembership::kNotCarried) {
                p.source_key = MacTable::key_of(p.frame.source, p.vlan);
                p.destination_key = MacTable::key_of(p.frame.destination, p.vlan);
                table_.prefetch(p.source_key);
                if (!is_group_address(p.frame.destination)) {
                    table_.prefetch(p.destination_key);
                }
            }
        }
        previous = &p;
    }
}

inline bool SwitchCore::admit(uint16_t ingress, const ParsedFrame& p, uint64_t now, bool* learned) {
    const MemberConfig& config = members_[ingress].config;
    const uint64_t source = p.frame.source;
    if (p.vlan == VlanMembership::kNotCarried) {
        counters_.count_drop(packet::DropReason::vlan_not_allowed);
        return false;
    }
    if (is_group_address(source) || is_zero_address(source)) {
        counters_.count_drop(packet::DropReason::invalid_source_mac);
        return false;
    }
    if (!config.allowed_macs.empty() &&
        std::none_of(config.allowed_macs.begin(), config.allowed_macs.end(),
                     [&](const MacAddress& m) { return mac_bits(m) == source; })) {
        counters_.count_drop(packet::DropReason::spoofed);
        return false;
    }
    if (p.source_key == routed_key_) {
        routed_key_ = 0;  // its lookup may answer differently once it is learned
    }
    *learned = table_.learn(p.source_key, ingress, now);
    if (*learned) {
        learned_memo_[memo_slot(p.source_key)] = p.source_key;
    }
    return true;
}

bool SwitchCore::admitted_this_burst(const ParsedFrame& p) const {
    // A frame whose VLAN the ingress does not carry has no keys (parse_burst).
    return p.vlan != VlanMembership::kNotCarried &&
           learned_memo_[memo_slot(p.source_key)] == p.source_key;
}

void SwitchCore::reset_burst_memo() {
    learned_memo_.fill(0);
    routed_key_ = 0;
}

SwitchCore::Route SwitchCore::route(uint16_t ingress, const ParsedFrame& p, uint64_t now) {
    if (is_group_address(p.frame.destination)) {
        return Route{Route::Kind::flood};
    }
    if (p.destination_key != routed_key_) {
        routed_key_ = p.destination_key;
        routed_ = lookup_route(ingress, p, now);
    }
    return routed_;
}

SwitchCore::Route SwitchCore::lookup_route(uint16_t ingress, const ParsedFrame& p, uint64_t now) {
    const uint16_t to = table_.lookup(p.destination_key, now);
    if (to == MacTable::kUnknown) {
        return Route{Route::Kind::flood};
    }
    // A frame for a MAC behind its own port goes nowhere (no hairpin).
    const Egress e = to == ingress ? Egress::none : members_[to].config.vlans.egress(p.vlan);
    if (e == Egress::none) {
        return Route{};
    }
    return Route{Route::Kind::unicast, e == Egress::tagged, to};
}

inline void SwitchCore::send(BurstPlan& plan, uint16_t member, uint8_t packet, bool tagged) {
    uint16_t& g = plan.group_of[member];
    if (g == 0) {
        EgressGroup& group = plan.groups[plan.group_count];
        group.member = member;
        group.count = 0;
        g = ++plan.group_count;
    }
    EgressGroup& group = plan.groups[g - 1u];
    group.entries[group.count++] = EgressEntry{packet, tagged};
    ++plan.packets[packet].copies;
}

void SwitchCore::flood(BurstPlan& plan, uint16_t ingress, uint8_t packet) {
    const uint16_t vlan = plan.packets[packet].vlan;
    for (uint16_t m : active_) {
        if (m == ingress) {
            continue;
        }
        Egress e = members_[m].config.vlans.egress(vlan);
        if (e != Egress::none) {
            send(plan, m, packet, e == Egress::tagged);
        }
    }
    if (plan.packets[packet].copies != 0) {
        counters_.flooded.add(1);
    }
}

uint16_t SwitchCore::classify_frames(uint16_t ingress, uint16_t count, uint64_t now_ns,
                                     uint16_t from, BurstPlan& plan, Decided& decided) {
    Route last = decided.route;
    bool have_last = decided.valid;
    // The frame before was decided without a look at the table (the memo,
    // or a repeat): the next may be too, and then a run takes over. Not
    // after one that admit learned: a burst of many sources (a switch that
    // learned thousands of MACs) would pay the run's checks every frame.
    bool try_run = false;
    uint16_t i = from;
    for (; i < count; ++i) {
        if (try_run && known_frame(parsed_[i], routed_key_, routed_)) {
            break;
        }
        PacketVerdict& verdict = plan.packets[i];
        const ParsedFrame& p = parsed_[i];
        if (!p.parsed) {
            verdict = PacketVerdict{};
            counters_.count_drop(packet::DropReason::packet_too_short);
            have_last = false;
            try_run = false;
            continue;
        }
        try_run = true;
        if (!have_last || !p.repeat) {
            // A source admitted and learned earlier in the burst (with its
            // VLAN: the key holds both) is admitted again without a look.
            bool learned = admitted_this_burst(p);
            try_run = learned;
            if (!learned && !admit(ingress, p, now_ns, &learned)) {
                verdict = PacketVerdict{};
                have_last = false;
                continue;
            }
            last = route(ingress, p, now_ns);
            have_last = learned;
        }
        // Field by field from the parsed frame, written long ago: a verdict
        // copied whole from one just written stalls on store forwarding.
        // Its prefix is the parser's (parse_burst).
        verdict.vlan = p.vlan;
        verdict.tci = p.frame.tci;
        verdict.tagged = p.frame.tagged;
        verdict.copies = 0;
        verdict.copies_to_ports_down = 0;
        const auto index = static_cast<uint8_t>(i);
        switch (last.kind) {
            case Route::Kind::flood:
                flood(plan, ingress, index);
                break;
            case Route::Kind::unicast:
                send(plan, last.to, index, last.tagged);
                break;
            case Route::Kind::none:
                break;
        }
        if (verdict.copies == 0) {
            counters_.count_drop(packet::DropReason::no_destination);
        }
    }
    decided = Decided{last, have_last};
    return i;
}

bool SwitchCore::known_frame(const ParsedFrame& p, MacTable::Key routed_key, Route routed) const {
    // The destination first: it is the cached one far more often than the
    // source is in the memo (a switch that learned thousands of MACs).
    return p.parsed && p.destination_key == routed_key && routed.kind == Route::Kind::unicast &&
           !is_group_address(p.frame.destination) && admitted_this_burst(p);
}

uint16_t SwitchCore::classify_known_run(uint16_t from, uint16_t count, BurstPlan& plan) {
    // The cached route in locals: the stores into `plan` could alias it.
    const MacTable::Key routed_key = routed_key_;
    const Route routed = routed_;
    uint16_t i = from;
    for (; i < count && known_frame(parsed_[i], routed_key, routed); ++i) {
        const ParsedFrame& p = parsed_[i];
        PacketVerdict& verdict = plan.packets[i];
        verdict.vlan = p.vlan;
        verdict.tci = p.frame.tci;
        verdict.tagged = p.frame.tagged;
        verdict.copies = 0;
        verdict.copies_to_ports_down = 0;
        send(plan, routed.to, static_cast<uint8_t>(i), routed.tagged);
    }
    return i;
}

void SwitchCore::classify(uint16_t ingress, const packet::PacketBurst& burst, uint64_t now_ns,
                          BurstPlan& plan) {
    for (uint16_t g = 0; g < plan.group_count; ++g) {
        plan.group_of[plan.groups[g].member] = 0;
    }
    plan.group_count = 0;
    if (now_ns >= next_sweep_ns_) {
        table_.age(now_ns);
        next_sweep_ns_ = now_ns + kSweepIntervalNs;
    }
    if (!has_member(ingress)) {
        counters_.count_drop(packet::DropReason::no_destination, burst.count);
        return;
    }
    // A run of frames with the same Ethernet header (one flow's burst) is
    // decided once. Admission depends only on the ingress, the source and
    // the tag; learning the same source again at the same time changes
    // nothing; so the lookup, which only learning could change, gives the
    // same answer. A source a full table refused is decided again each time,
    // so table_full still counts every frame.
    parse_burst(ingress, burst, plan);
    reset_burst_memo();
    // Frames one at a time until one the burst decided already (the
    // memo, the cached route) follows one decided so; from there a run of
    // such frames with nothing else in its loop; and so on.
    Decided last;
    uint16_t i = 0;
    while (i < burst.count) {
        i = classify_frames(ingress, burst.count, now_ns, i, plan, last);
        if (i < burst.count) {
            i = classify_known_run(i, burst.count, plan);
            // Its last frame's source was learned (the memo) and its route
            // is the cached one: what the frame after it may repeat.
            last = Decided{routed_, true};
        }
    }
}

}  // namespace vnet::dataplane::switching
