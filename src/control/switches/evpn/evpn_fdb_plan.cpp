#include "control/switches/evpn/evpn_fdb_plan.hpp"

namespace vnet::control::evpn {

EvpnFdbPlan EvpnFdbPlanner::plan(const std::vector<SwitchMac>& switch_macs, const KernelFdb& kernel,
                                 uint64_t since_last_ns) {
    EvpnFdbPlan out;
    std::map<MacAddress, const SwitchMac*> in_switch;
    for (const SwitchMac& m : switch_macs) {
        in_switch[m.mac] = &m;
    }
    // The MACs that are local after this round.
    std::set<MacAddress> local;
    for (const SwitchMac& m : switch_macs) {
        if (m.member == uplink_) {
            continue;
        }
        const auto remote = kernel.remotes.find(m.mac);
        if (remote != kernel.remotes.end()) {
            const auto before = previous_remotes_.find(m.mac);
            const bool news = before == previous_remotes_.end() || before->second != remote->second;
            if (news && m.age_ns >= since_last_ns) {
                continue;  // moved away: pinned below
            }
        }
        local.insert(m.mac);
    }
    for (const MacAddress& mac : local) {
        if (!kernel.statics.contains(mac)) {
            out.add_static.push_back(mac);
        }
    }
    for (const MacAddress& mac : kernel.statics) {
        if (!local.contains(mac)) {
            out.remove_static.push_back(mac);
        }
    }
    std::set<MacAddress> pinned;
    for (const auto& [mac, vtep] : kernel.remotes) {
        if (local.contains(mac)) {
            continue;
        }
        const auto seen = in_switch.find(mac);
        out.pin.push_back({mac, seen == in_switch.end() ? kNoMember : seen->second->member});
        pinned.insert(mac);
    }
    for (const MacAddress& mac : pinned_) {
        if (!kernel.remotes.contains(mac)) {
            out.unpin.push_back(mac);
        }
    }
    pinned_ = std::move(pinned);
    previous_remotes_ = kernel.remotes;
    return out;
}

}  // namespace vnet::control::evpn
