// EvpnFdbPlanner: what one round of the EVPN sync (evpn_fdb_sync.hpp)
// changes, decided from what the switch and the kernel hold now. Pure: no
// syscalls, no threads; the sync reads both sides and applies the plan.
//
// The two tables and who writes what:
//  - the switch's MAC table (its worker learns from frames): a MAC learned
//    on a local port (a VM, a pod, a tap) is local;
//  - the bridge FDB of `vxbr<VNI>`: vnetd writes one static entry on the
//    uplink's tap per local MAC (zebra advertises it as a type-2 route);
//    zebra writes the remote MACs on the vxlan device (`dst VTEP`).
// Each round:
//  - a local MAC without a static entry gets one; a static entry whose MAC
//    is no longer local (aged out, flushed, its port gone, moved) goes;
//  - every remote MAC that is not local is put behind the uplink in the
//    switch ("pinned"), each round again, so it never ages out while
//    zebra keeps it; one zebra withdrew is forgotten (if still behind the
//    uplink);
//  - a MAC both local and remote: the most recent news wins. Zebra
//    installing it (or moving it to another VTEP) since the last round
//    while the switch has not seen it locally for that long means it moved
//    away (live migration to another host): it is pinned behind the uplink
//    and its static entry goes. Otherwise it is local (it sent a frame
//    here: a VM that arrived, whose RARP re-learned it) and the static
//    entry, which replaces zebra's in the bridge, makes zebra advertise
//    it with a higher mobility sequence, after which it withdraws its own.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "packet/wire.hpp"
#include "ports/vxlan/evpn_fdb.hpp"

namespace vnet::control::evpn {

using packet::MacAddress;

// A MAC the switch holds (not expired) in the EVPN VLAN.
struct SwitchMac {
    MacAddress mac;
    uint16_t member;  // the port it was seen on
    uint64_t age_ns;  // since it was last seen
};

// What the kernel holds: the static entries on the uplink's tap (vnetd's),
// and the remote MACs on the vxlan device with their VTEP ("" when only the
// bridge's entry names it); read by ports::EvpnFdb.
using KernelFdb = ports::EvpnFdbView;

struct Pin {
    MacAddress mac;
    // The member the switch had it on when the plan was made: the pin is
    // applied only if it is still there (or behind the uplink, or gone), so
    // a frame that re-learned it locally in between wins.
    uint16_t seen_on;
};

struct EvpnFdbPlan {
    std::vector<MacAddress> add_static;
    std::vector<MacAddress> remove_static;
    std::vector<Pin> pin;
    std::vector<MacAddress> unpin;  // forgotten if still behind the uplink
    bool empty() const {
        return add_static.empty() && remove_static.empty() && pin.empty() && unpin.empty();
    }
};

// The member id the plan uses for "nowhere in the switch".
inline constexpr uint16_t kNoMember = UINT16_MAX;

class EvpnFdbPlanner {
public:
    explicit EvpnFdbPlanner(uint16_t uplink_member) : uplink_(uplink_member) {}

    // One round: `since_last_ns` is the time since the previous round's
    // view of the switch. Remembers this round's remotes and pins.
    EvpnFdbPlan plan(const std::vector<SwitchMac>& switch_macs, const KernelFdb& kernel,
                     uint64_t since_last_ns);

    const std::set<MacAddress>& pinned() const { return pinned_; }

private:
    uint16_t uplink_;
    std::map<MacAddress, std::string> previous_remotes_;
    std::set<MacAddress> pinned_;
};

}  // namespace vnet::control::evpn
