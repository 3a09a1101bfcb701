// EvpnFdb: the rtnetlink side of the EVPN sync (control/switches/evpn/):
// reads the FDB of an EVPN uplink's bridge `vxbr<VNI>` and writes vnetd's
// static entries into it. What it reads is sorted by classify_fdb_entry
// (pure, below):
//  - vnetd's own entries, `MAC dev vxtap<VNI> master static` (bridge entries
//    on the uplink's tap, NUD_NOARP): the switch's local MACs, which FRR's
//    zebra advertises as type-2 routes;
//  - the remote MACs zebra installs on `vxlan<VNI>`: `MAC dst VTEP self
//    extern_learn` in the vxlan device's own table (what sends a frame to
//    one VTEP) and, when zebra also adds it, the bridge's `master` entry on
//    the vxlan port;
//  - the flood list zebra installs from type-3 routes: one
//    `00:00:00:00:00:00 dst VTEP self` entry per remote host of the VNI in
//    the vxlan device's own table (head-end replication: where broadcast,
//    multicast and unknown unicast go); the socket datapath needs it to
//    flood like the kernel device does;
//  - everything else is no one's business here: the ports' own addresses
//    (permanent), group addresses, other ports, an all-zero entry that names
//    no VTEP.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "common/netlink_handles.hpp"
#include "packet/wire.hpp"

namespace vnet::ports {

// One RTM_NEWNEIGH of the dump, as the kernel sent it.
struct FdbEntry {
    packet::MacAddress mac{};
    unsigned ifindex = 0;
    uint16_t state = 0;   // NUD_*
    uint8_t flags = 0;    // NTF_*
    unsigned master = 0;  // NDA_MASTER: a bridge's entry (0: the device's own)
    std::string dst;      // NDA_DST as text ("" if none)
};

// What the sync reads: the two sets it compares with the switch, and the
// flood list (which the planner does not look at).
struct EvpnFdbView {
    std::set<packet::MacAddress> statics;               // vnetd's, on the tap
    std::map<packet::MacAddress, std::string> remotes;  // zebra's, on the vxlan device
    std::set<std::string> flood;                        // zebra's VTEPs (NDA_DST text)
};

// Adds `entry` to `view` if it is one of the three kinds above.
void classify_fdb_entry(const FdbEntry& entry, unsigned tap_ifindex, unsigned vxlan_ifindex,
                        EvpnFdbView& view);

class EvpnFdb {
public:
    // `device` names the uplink for messages. Throws PortSetupError when
    // no rtnetlink socket can be had.
    EvpnFdb(std::string device, unsigned bridge_ifindex, unsigned tap_ifindex,
            unsigned vxlan_ifindex);

    // Dumps the bridge's FDB (`bridge fdb show br vxbr<VNI>`: the bridge's
    // entries and each port's own). Throws PortSetupError.
    EvpnFdbView read();
    // `bridge fdb replace MAC dev vxtap<VNI> master static` (replacing an
    // entry zebra made for the MAC on the vxlan port) and its removal
    // (gone already: fine). Throw PortSetupError.
    void add_static(const packet::MacAddress& mac);
    void remove_static(const packet::MacAddress& mac);

private:
    int change_static(int type, int flags, const packet::MacAddress& mac);

    std::string device_;
    unsigned bridge_;
    unsigned tap_;
    unsigned vxlan_;
    netlink::Sock sk_;
};

}  // namespace vnet::ports
