#include "vhost_user/protocol_feature_names.hpp"

#include "vhost_user/message.hpp"

namespace vnet::vhost_user {

std::string_view protocol_feature_name(unsigned bit) {
    if (bit >= 64) {
        return {};
    }
    switch (static_cast<ProtocolFeature>(bit)) {
        case ProtocolFeature::mq:
            return "VHOST_USER_PROTOCOL_F_MQ";
        case ProtocolFeature::log_shmfd:
            return "VHOST_USER_PROTOCOL_F_LOG_SHMFD";
        case ProtocolFeature::rarp:
            return "VHOST_USER_PROTOCOL_F_RARP";
        case ProtocolFeature::reply_ack:
            return "VHOST_USER_PROTOCOL_F_REPLY_ACK";
        case ProtocolFeature::net_mtu:
            return "VHOST_USER_PROTOCOL_F_NET_MTU";
        case ProtocolFeature::backend_req:
            return "VHOST_USER_PROTOCOL_F_BACKEND_REQ";
        case ProtocolFeature::cross_endian:
            return "VHOST_USER_PROTOCOL_F_CROSS_ENDIAN";
        case ProtocolFeature::crypto_session:
            return "VHOST_USER_PROTOCOL_F_CRYPTO_SESSION";
        case ProtocolFeature::pagefault:
            return "VHOST_USER_PROTOCOL_F_PAGEFAULT";
        case ProtocolFeature::config:
            return "VHOST_USER_PROTOCOL_F_CONFIG";
        case ProtocolFeature::backend_send_fd:
            return "VHOST_USER_PROTOCOL_F_BACKEND_SEND_FD";
        case ProtocolFeature::host_notifier:
            return "VHOST_USER_PROTOCOL_F_HOST_NOTIFIER";
        case ProtocolFeature::inflight_shmfd:
            return "VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD";
        case ProtocolFeature::reset_device:
            return "VHOST_USER_PROTOCOL_F_RESET_DEVICE";
        case ProtocolFeature::inband_notifications:
            return "VHOST_USER_PROTOCOL_F_INBAND_NOTIFICATIONS";
        case ProtocolFeature::configure_mem_slots:
            return "VHOST_USER_PROTOCOL_F_CONFIGURE_MEM_SLOTS";
        case ProtocolFeature::status:
            return "VHOST_USER_PROTOCOL_F_STATUS";
        case ProtocolFeature::xen_mmap:
            return "VHOST_USER_PROTOCOL_F_XEN_MMAP";
        case ProtocolFeature::shared_object:
            return "VHOST_USER_PROTOCOL_F_SHARED_OBJECT";
        case ProtocolFeature::device_state:
            return "VHOST_USER_PROTOCOL_F_DEVICE_STATE";
    }
    return {};
}

}  // namespace vnet::vhost_user
