// For the DPDK peer of the XDP_REDIRECT row: `ip link set ... xdpdrv obj
// xdp_redirect.bpf.o` attaches the program vnetd uses, but only vnetd fills
// its devmap (redirect_map[0] = the target's ifindex). This does the same
// for a program attached by `ip`: find it on the device, find its devmap,
// write the target's ifindex. Runs inside the namespace, because a devmap
// resolves the ifindex in the namespace of the writer.
#pragma once

#include <string>

namespace vnet::bench {

// Throws std::runtime_error naming the step that failed.
void point_xdp_redirect_map(const std::string& netns, const std::string& ifname,
                            const std::string& target_ifname);

}  // namespace vnet::bench
