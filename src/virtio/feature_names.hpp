// The spec's names of feature bits, for people reading `vnetctl show`:
// virtio 1.2 §5.1.3 (net) and §6 (reserved), and the vhost bits, under the
// macro names the kernel, QEMU and DPDK print (VIRTIO_NET_F_MRG_RXBUF).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "virtio/features.hpp"

namespace vnet::virtio {

// The name of feature bit `bit`; empty for a bit vnetd has no name for.
std::string_view feature_name(unsigned bit);

// Every set bit of `bits`, lowest first, by `name_of` (a bit it has no name
// for as "bit N"): the one decoder for feature and protocol-feature words.
std::vector<std::string> bit_names(uint64_t bits, std::string_view (*name_of)(unsigned bit));

inline std::vector<std::string> feature_names(FeatureSet features) {
    return bit_names(features.bits(), feature_name);
}

}  // namespace vnet::virtio
