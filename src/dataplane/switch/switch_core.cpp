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

bool SwitchCore::admit(uint16_t ingress, const L2Frame& frame, uint64_t now, PacketVerdict& verdict,
                       bool* learned) {
    const MemberConfig& config = members_[ingress].config;
    std::optional<uint16_t> vid;
    if (frame.tagged) {
        vid = static_cast<uint16_t>(frame.tci & kVlanIdMask);
    }
    std::optional<uint16_t> vlan = config.vlans.ingress_vlan(vid);
    if (!vlan) {
        counters_.count_drop(packet::DropReason::vlan_not_allowed);
        return false;
    }
    if (is_group_address(frame.source) || is_zero_address(frame.source)) {
        counters_.count_drop(packet::DropReason::invalid_source_mac);
        return false;
    }
    if (!config.allowed_macs.empty() &&
        std::find(config.allowed_macs.begin(), config.allowed_macs.end(), frame.source) ==
            config.allowed_macs.end()) {
        counters_.count_drop(packet::DropReason::spoofed);
        return false;
    }
    *learned = table_.learn(frame.source, *vlan, ingress, now);
    verdict.vlan = *vlan;
    verdict.tagged = frame.tagged;
    verdict.tci = frame.tci;
    verdict.ethertype = frame.ethertype;
    verdict.destination = frame.destination;
    verdict.source = frame.source;
    return true;
}

SwitchCore::Route SwitchCore::route(uint16_t ingress, const L2Frame& frame, uint16_t vlan,
                                    uint64_t now) {
    if (is_group_address(frame.destination)) {
        return Route{Route::Kind::flood};
    }
    const uint16_t to = table_.lookup(frame.destination, vlan, now);
    if (to == MacTable::kUnknown) {
        return Route{Route::Kind::flood};
    }
    // A frame for a MAC behind its own port goes nowhere (no hairpin).
    const Egress e = to == ingress ? Egress::none : members_[to].config.vlans.egress(vlan);
    if (e == Egress::none) {
        return Route{};
    }
    return Route{Route::Kind::unicast, e == Egress::tagged, to};
}

void SwitchCore::send(BurstPlan& plan, uint16_t member, uint8_t packet, bool tagged) {
    uint16_t& g = plan.group_of[member];
    if (g == 0) {
        EgressGroup& group = plan.groups[plan.group_count];
        group.member = member;
        group.count = 0;
        g = ++plan.group_count;
    }
    EgressGroup& group = plan.groups[g - 1u];
    group.entries[group.count++] = EgressEntry{packet, tagged};
    plan.packets[packet].forwarded = true;
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
    plan.packets[packet].flooded = true;
    if (plan.packets[packet].forwarded) {
        counters_.flooded.add(1);
    }
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
    Decision last;
    bool have_last = false;
    for (uint16_t i = 0; i < burst.count; ++i) {
        PacketVerdict& verdict = plan.packets[i];
        const std::optional<L2Frame> frame =
            parse_l2_frame(burst.packet_iovecs(i), burst.packets[i].len, burst.header_size);
        if (!frame) {
            verdict = PacketVerdict{};
            counters_.count_drop(packet::DropReason::packet_too_short);
            have_last = false;
            continue;
        }
        if (!have_last || !same_l2_header(*frame, last.frame)) {
            verdict = PacketVerdict{};
            bool learned = false;
            if (!admit(ingress, *frame, now_ns, verdict, &learned)) {
                have_last = false;
                continue;
            }
            last = Decision{*frame, verdict, route(ingress, *frame, verdict.vlan, now_ns)};
            have_last = learned;
        } else {
            verdict = last.verdict;
        }
        const auto index = static_cast<uint8_t>(i);
        switch (last.route.kind) {
            case Route::Kind::flood:
                flood(plan, ingress, index);
                break;
            case Route::Kind::unicast:
                send(plan, last.route.to, index, last.route.tagged);
                break;
            case Route::Kind::none:
                break;
        }
        if (!verdict.forwarded) {
            counters_.count_drop(packet::DropReason::no_destination);
        }
    }
}

}  // namespace vnet::dataplane::switching
