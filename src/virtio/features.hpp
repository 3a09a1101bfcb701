// Feature bits as a typed set. Bit numbers are virtio 1.2 §5.1.3 (net) and
// §6 (reserved/transport), plus the two vhost-user specific bits.
#pragma once

#include <cstdint>

#include "virtio/bit_set.hpp"

namespace vnet::virtio {

enum class Feature : uint8_t {
    net_csum = 0,
    net_guest_csum = 1,
    net_ctrl_guest_offloads = 2,
    net_mtu = 3,
    net_mac = 5,
    net_guest_tso4 = 7,
    net_guest_tso6 = 8,
    net_guest_ecn = 9,
    net_guest_ufo = 10,
    net_host_tso4 = 11,
    net_host_tso6 = 12,
    net_host_ecn = 13,
    net_host_ufo = 14,
    net_mrg_rxbuf = 15,
    net_status = 16,
    net_ctrl_vq = 17,
    net_ctrl_rx = 18,
    net_ctrl_vlan = 19,
    net_guest_announce = 21,
    net_mq = 22,
    net_ctrl_mac_addr = 23,
    notify_on_empty = 24,
    vhost_log_all = 26,  // VHOST_F_LOG_ALL
    any_layout = 27,
    ring_indirect_desc = 28,
    ring_event_idx = 29,
    vhost_user_protocol_features = 30,  // VHOST_USER_F_PROTOCOL_FEATURES
    version_1 = 32,
    access_platform = 33,
    ring_packed = 34,
    in_order = 35,
    order_platform = 36,
    net_guest_uso4 = 54,
    net_guest_uso6 = 55,
    net_host_uso = 56,
};

using FeatureSet = BitSet<Feature>;

static_assert(FeatureSet{Feature::version_1}.bits() == (uint64_t{1} << 32));
static_assert(FeatureSet::mask(Feature::vhost_user_protocol_features) == 0x40000000);

}  // namespace vnet::virtio
