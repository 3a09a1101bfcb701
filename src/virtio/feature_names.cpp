#include "virtio/feature_names.hpp"

namespace vnet::virtio {

std::string_view feature_name(unsigned bit) {
    if (bit >= 64) {
        return {};
    }
    switch (static_cast<Feature>(bit)) {
        case Feature::net_csum:
            return "VIRTIO_NET_F_CSUM";
        case Feature::net_guest_csum:
            return "VIRTIO_NET_F_GUEST_CSUM";
        case Feature::net_ctrl_guest_offloads:
            return "VIRTIO_NET_F_CTRL_GUEST_OFFLOADS";
        case Feature::net_mtu:
            return "VIRTIO_NET_F_MTU";
        case Feature::net_mac:
            return "VIRTIO_NET_F_MAC";
        case Feature::net_guest_tso4:
            return "VIRTIO_NET_F_GUEST_TSO4";
        case Feature::net_guest_tso6:
            return "VIRTIO_NET_F_GUEST_TSO6";
        case Feature::net_guest_ecn:
            return "VIRTIO_NET_F_GUEST_ECN";
        case Feature::net_guest_ufo:
            return "VIRTIO_NET_F_GUEST_UFO";
        case Feature::net_host_tso4:
            return "VIRTIO_NET_F_HOST_TSO4";
        case Feature::net_host_tso6:
            return "VIRTIO_NET_F_HOST_TSO6";
        case Feature::net_host_ecn:
            return "VIRTIO_NET_F_HOST_ECN";
        case Feature::net_host_ufo:
            return "VIRTIO_NET_F_HOST_UFO";
        case Feature::net_mrg_rxbuf:
            return "VIRTIO_NET_F_MRG_RXBUF";
        case Feature::net_status:
            return "VIRTIO_NET_F_STATUS";
        case Feature::net_ctrl_vq:
            return "VIRTIO_NET_F_CTRL_VQ";
        case Feature::net_ctrl_rx:
            return "VIRTIO_NET_F_CTRL_RX";
        case Feature::net_ctrl_vlan:
            return "VIRTIO_NET_F_CTRL_VLAN";
        case Feature::net_guest_announce:
            return "VIRTIO_NET_F_GUEST_ANNOUNCE";
        case Feature::net_mq:
            return "VIRTIO_NET_F_MQ";
        case Feature::net_ctrl_mac_addr:
            return "VIRTIO_NET_F_CTRL_MAC_ADDR";
        case Feature::notify_on_empty:
            return "VIRTIO_F_NOTIFY_ON_EMPTY";
        case Feature::vhost_log_all:
            return "VHOST_F_LOG_ALL";
        case Feature::any_layout:
            return "VIRTIO_F_ANY_LAYOUT";
        case Feature::ring_indirect_desc:
            return "VIRTIO_RING_F_INDIRECT_DESC";
        case Feature::ring_event_idx:
            return "VIRTIO_RING_F_EVENT_IDX";
        case Feature::vhost_user_protocol_features:
            return "VHOST_USER_F_PROTOCOL_FEATURES";
        case Feature::version_1:
            return "VIRTIO_F_VERSION_1";
        case Feature::access_platform:
            return "VIRTIO_F_ACCESS_PLATFORM";
        case Feature::ring_packed:
            return "VIRTIO_F_RING_PACKED";
        case Feature::in_order:
            return "VIRTIO_F_IN_ORDER";
        case Feature::order_platform:
            return "VIRTIO_F_ORDER_PLATFORM";
        case Feature::net_guest_uso4:
            return "VIRTIO_NET_F_GUEST_USO4";
        case Feature::net_guest_uso6:
            return "VIRTIO_NET_F_GUEST_USO6";
        case Feature::net_host_uso:
            return "VIRTIO_NET_F_HOST_USO";
    }
    return {};
}

std::vector<std::string> bit_names(uint64_t bits, std::string_view (*name_of)(unsigned bit)) {
    std::vector<std::string> out;
    for (unsigned bit = 0; bit < 64; ++bit) {
        if ((bits & (uint64_t{1} << bit)) == 0) {
            continue;
        }
        const std::string_view name = name_of(bit);
        out.push_back(name.empty() ? "bit " + std::to_string(bit) : std::string(name));
    }
    return out;
}

}  // namespace vnet::virtio
