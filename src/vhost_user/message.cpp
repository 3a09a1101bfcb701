#include "vhost_user/message.hpp"

namespace vnet::vhost_user {

const char* to_string(Request r) {
    switch (r) {
        case Request::none: return "NONE";
        case Request::get_features: return "GET_FEATURES";
        case Request::set_features: return "SET_FEATURES";
        case Request::set_owner: return "SET_OWNER";
        case Request::reset_owner: return "RESET_OWNER";
        case Request::set_mem_table: return "SET_MEM_TABLE";
        case Request::set_log_base: return "SET_LOG_BASE";
        case Request::set_log_fd: return "SET_LOG_FD";
        case Request::set_vring_num: return "SET_VRING_NUM";
        case Request::set_vring_addr: return "SET_VRING_ADDR";
        case Request::set_vring_base: return "SET_VRING_BASE";
        case Request::get_vring_base: return "GET_VRING_BASE";
        case Request::set_vring_kick: return "SET_VRING_KICK";
        case Request::set_vring_call: return "SET_VRING_CALL";
        case Request::set_vring_err: return "SET_VRING_ERR";
        case Request::get_protocol_features: return "GET_PROTOCOL_FEATURES";
        case Request::set_protocol_features: return "SET_PROTOCOL_FEATURES";
        case Request::get_queue_num: return "GET_QUEUE_NUM";
        case Request::set_vring_enable: return "SET_VRING_ENABLE";
        case Request::send_rarp: return "SEND_RARP";
        case Request::net_set_mtu: return "NET_SET_MTU";
        case Request::set_backend_req_fd: return "SET_BACKEND_REQ_FD";
        case Request::iotlb_msg: return "IOTLB_MSG";
        case Request::set_vring_endian: return "SET_VRING_ENDIAN";
        case Request::get_config: return "GET_CONFIG";
        case Request::set_config: return "SET_CONFIG";
        case Request::create_crypto_session: return "CREATE_CRYPTO_SESSION";
        case Request::close_crypto_session: return "CLOSE_CRYPTO_SESSION";
        case Request::postcopy_advise: return "POSTCOPY_ADVISE";
        case Request::postcopy_listen: return "POSTCOPY_LISTEN";
        case Request::postcopy_end: return "POSTCOPY_END";
        case Request::get_inflight_fd: return "GET_INFLIGHT_FD";
        case Request::set_inflight_fd: return "SET_INFLIGHT_FD";
        case Request::gpu_set_socket: return "GPU_SET_SOCKET";
        case Request::reset_device: return "RESET_DEVICE";
        case Request::vring_kick: return "VRING_KICK";
        case Request::get_max_mem_slots: return "GET_MAX_MEM_SLOTS";
        case Request::add_mem_reg: return "ADD_MEM_REG";
        case Request::rem_mem_reg: return "REM_MEM_REG";
        case Request::set_status: return "SET_STATUS";
        case Request::get_status: return "GET_STATUS";
        case Request::get_shared_object: return "GET_SHARED_OBJECT";
        case Request::set_device_state_fd: return "SET_DEVICE_STATE_FD";
        case Request::check_device_state: return "CHECK_DEVICE_STATE";
    }
    return "UNKNOWN";
}

}  // namespace vnet::vhost_user
