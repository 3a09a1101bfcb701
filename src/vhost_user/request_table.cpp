#include "vhost_user/request_table.hpp"

#include <array>

#include "vhost_user/device.hpp"

namespace vnet::vhost_user {

struct RequestTableBuilder {
    using D = VhostUserDevice;
    using PF = ProtocolFeature;
    static constexpr std::optional<ProtocolFeature> kAlways = std::nullopt;
    static constexpr uint32_t kU64 = sizeof(uint64_t);

    static constexpr RequestSpec supported(Request r, const char* name, RequestHandler h,
                                           FdRule fds, uint32_t size, bool has_reply,
                                           std::optional<ProtocolFeature> needs) {
        return {r, name, h, fds, PayloadRule::exact, size, has_reply, needs};
    }
    static constexpr RequestSpec unsupported(Request r, const char* name, bool has_reply,
                                             std::optional<ProtocolFeature> needs) {
        return {r, name, nullptr, FdRule::none, PayloadRule::unchecked, 0, has_reply, needs};
    }

    // vhost-user.rst "Front-end message types": payload, fds and reply per request.
    static constexpr std::array<RequestSpec, kRequestCount> make() {
        return {{
            unsupported(Request::none, "NONE", false, kAlways),
            supported(Request::get_features, "GET_FEATURES", &D::handle_get_features, FdRule::none,
                      0, true, kAlways),
            supported(Request::set_features, "SET_FEATURES", &D::handle_set_features, FdRule::none,
                      kU64, false, kAlways),
            supported(Request::set_owner, "SET_OWNER", &D::handle_set_owner, FdRule::none, 0, false,
                      kAlways),
            supported(Request::reset_owner, "RESET_OWNER", &D::handle_reset_owner, FdRule::none, 0,
                      false, kAlways),
            {Request::set_mem_table, "SET_MEM_TABLE", &D::handle_set_mem_table,
             FdRule::one_per_region, PayloadRule::memory_table, 0, false, kAlways},
            // The reply is an empty SET_LOG_BASE (QEMU waits for it; DPDK sends it).
            supported(Request::set_log_base, "SET_LOG_BASE", &D::handle_set_log_base,
                      FdRule::exactly_one, sizeof(LogBase), true, PF::log_shmfd),
            supported(Request::set_log_fd, "SET_LOG_FD", &D::handle_set_log_fd, FdRule::exactly_one,
                      0, false, kAlways),
            supported(Request::set_vring_num, "SET_VRING_NUM", &D::handle_set_vring_num,
                      FdRule::none, sizeof(VringState), false, kAlways),
            supported(Request::set_vring_addr, "SET_VRING_ADDR", &D::handle_set_vring_addr,
                      FdRule::none, sizeof(VringAddr), false, kAlways),
            supported(Request::set_vring_base, "SET_VRING_BASE", &D::handle_set_vring_base,
                      FdRule::none, sizeof(VringState), false, kAlways),
            supported(Request::get_vring_base, "GET_VRING_BASE", &D::handle_get_vring_base,
                      FdRule::none, sizeof(VringState), true, kAlways),
            supported(Request::set_vring_kick, "SET_VRING_KICK", &D::handle_set_vring_kick,
                      FdRule::one_unless_nofd, kU64, false, kAlways),
            supported(Request::set_vring_call, "SET_VRING_CALL", &D::handle_set_vring_call,
                      FdRule::one_unless_nofd, kU64, false, kAlways),
            supported(Request::set_vring_err, "SET_VRING_ERR", &D::handle_set_vring_err,
                      FdRule::one_unless_nofd, kU64, false, kAlways),
            // Legal before SET_FEATURES (we always offer bit 30).
            supported(Request::get_protocol_features, "GET_PROTOCOL_FEATURES",
                      &D::handle_get_protocol_features, FdRule::none, 0, true, kAlways),
            supported(Request::set_protocol_features, "SET_PROTOCOL_FEATURES",
                      &D::handle_set_protocol_features, FdRule::none, kU64, false, kAlways),
            supported(Request::get_queue_num, "GET_QUEUE_NUM", &D::handle_get_queue_num,
                      FdRule::none, 0, true, PF::mq),
            supported(Request::set_vring_enable, "SET_VRING_ENABLE", &D::handle_set_vring_enable,
                      FdRule::none, sizeof(VringState), false, kAlways),
            supported(Request::send_rarp, "SEND_RARP", &D::handle_send_rarp, FdRule::none, kU64,
                      false, PF::rarp),
            supported(Request::net_set_mtu, "NET_SET_MTU", &D::handle_net_set_mtu, FdRule::none,
                      kU64, false, PF::net_mtu),
            supported(Request::set_backend_req_fd, "SET_BACKEND_REQ_FD",
                      &D::handle_set_backend_req_fd, FdRule::exactly_one, 0, false,
                      PF::backend_req),
            unsupported(Request::iotlb_msg, "IOTLB_MSG", true, kAlways),
            unsupported(Request::set_vring_endian, "SET_VRING_ENDIAN", false, PF::cross_endian),
            // Offered with an MTU: how a front end reads it (virtio_net_config.mtu).
            {Request::get_config, "GET_CONFIG", &D::handle_get_config, FdRule::none,
             PayloadRule::device_config, 0, true, PF::config, /*refused_with_empty_reply=*/true},
            unsupported(Request::set_config, "SET_CONFIG", false, PF::config),
            unsupported(Request::create_crypto_session, "CREATE_CRYPTO_SESSION", true,
                        PF::crypto_session),
            unsupported(Request::close_crypto_session, "CLOSE_CRYPTO_SESSION", false,
                        PF::crypto_session),
            unsupported(Request::postcopy_advise, "POSTCOPY_ADVISE", true, PF::pagefault),
            unsupported(Request::postcopy_listen, "POSTCOPY_LISTEN", false, PF::pagefault),
            unsupported(Request::postcopy_end, "POSTCOPY_END", true, PF::pagefault),
            // The reply carries the buffer's fd (vhost-user.rst GET_INFLIGHT_FD).
            supported(Request::get_inflight_fd, "GET_INFLIGHT_FD", &D::handle_get_inflight_fd,
                      FdRule::none, sizeof(InflightDescription), true, PF::inflight_shmfd),
            supported(Request::set_inflight_fd, "SET_INFLIGHT_FD", &D::handle_set_inflight_fd,
                      FdRule::exactly_one, sizeof(InflightDescription), false, PF::inflight_shmfd),
            unsupported(Request::gpu_set_socket, "GPU_SET_SOCKET", false, kAlways),
            unsupported(Request::reset_device, "RESET_DEVICE", false, PF::reset_device),
            unsupported(Request::vring_kick, "VRING_KICK", false, PF::inband_notifications),
            supported(Request::get_max_mem_slots, "GET_MAX_MEM_SLOTS", &D::handle_get_max_mem_slots,
                      FdRule::none, 0, true, PF::configure_mem_slots),
            supported(Request::add_mem_reg, "ADD_MEM_REG", &D::handle_add_mem_reg,
                      FdRule::exactly_one, sizeof(SingleMemoryRegion), false,
                      PF::configure_mem_slots),
            supported(Request::rem_mem_reg, "REM_MEM_REG", &D::handle_rem_mem_reg,
                      FdRule::at_most_one, sizeof(SingleMemoryRegion), false,
                      PF::configure_mem_slots),
            supported(Request::set_status, "SET_STATUS", &D::handle_set_status, FdRule::none, kU64,
                      false, PF::status),
            supported(Request::get_status, "GET_STATUS", &D::handle_get_status, FdRule::none, 0,
                      true, PF::status),
            unsupported(Request::get_shared_object, "GET_SHARED_OBJECT", true, PF::shared_object),
            unsupported(Request::set_device_state_fd, "SET_DEVICE_STATE_FD", true,
                        PF::device_state),
            unsupported(Request::check_device_state, "CHECK_DEVICE_STATE", true, PF::device_state),
        }};
    }
};

namespace {

constexpr std::array<RequestSpec, kRequestCount> kTable = RequestTableBuilder::make();

// Every request id has exactly one entry, at its own index.
constexpr bool every_id_has_its_own_entry() {
    for (uint32_t i = 0; i < kRequestCount; ++i) {
        if (static_cast<uint32_t>(kTable[i].request) != i || kTable[i].name == nullptr) {
            return false;
        }
    }
    return true;
}
static_assert(every_id_has_its_own_entry(), "request table out of order or incomplete");
static_assert(kRequestCount == static_cast<uint32_t>(Request::check_device_state) + 1);

// The variable fd rule goes with the variable payload rule. (That only
// unsupported requests skip the size check is a unit test: GCC with UBSan
// cannot compare member-function pointers in a constant expression.)
constexpr bool rules_are_consistent() {
    for (const RequestSpec& s : kTable) {
        if ((s.fds == FdRule::one_per_region) != (s.payload_rule == PayloadRule::memory_table)) {
            return false;
        }
    }
    return true;
}
static_assert(rules_are_consistent());

}  // namespace

const RequestSpec* find_request_spec(uint32_t id) {
    if (id >= kRequestCount) {
        return nullptr;
    }
    return &kTable[id];
}

MessageError check_payload_size(const RequestSpec& spec, const Message& msg) {
    switch (spec.payload_rule) {
        case PayloadRule::exact:
            return msg.size() == spec.payload_size ? MessageError::ok
                                                   : MessageError::payload_size_mismatch;
        case PayloadRule::memory_table: {
            uint32_t nregions;
            if (msg.size() < sizeof nregions) {
                return MessageError::payload_size_mismatch;
            }
            std::memcpy(&nregions, msg.payload.data(), sizeof nregions);
            // vhost-user.rst SET_MEM_TABLE: 1..8 regions ("VHOST_MEMORY_BASELINE_NREGIONS").
            if (nregions == 0 || nregions > kMaxMemTableRegions) {
                return MessageError::mem_region_count_invalid;
            }
            // QEMU and virtio-user send 8 + 32*n; some front ends send the whole struct.
            const bool exact = msg.size() == memory_table_payload_size(nregions);
            const bool full = msg.size() == sizeof(MemoryTable);
            return exact || full ? MessageError::ok : MessageError::payload_size_mismatch;
        }
        case PayloadRule::device_config: {
            DeviceConfigHeader h;
            if (msg.size() < sizeof h) {
                return MessageError::payload_size_mismatch;
            }
            std::memcpy(&h, msg.payload.data(), sizeof h);
            // vhost-user.rst GET_CONFIG: the payload is the header and `size`
            // bytes; the range must lie inside the config space we have.
            if (h.size > kMaxConfigSize || h.offset > kMaxConfigSize - h.size) {
                return MessageError::config_range_invalid;
            }
            return msg.size() == sizeof h + h.size ? MessageError::ok
                                                   : MessageError::payload_size_mismatch;
        }
        case PayloadRule::unchecked:
            return MessageError::ok;
    }
    return MessageError::payload_size_mismatch;
}

MessageError check_fd_count(const RequestSpec& spec, const Message& msg) {
    const size_t n = msg.fd_count;
    switch (spec.fds) {
        case FdRule::none:
            return n == 0 ? MessageError::ok : MessageError::unexpected_fds;
        case FdRule::exactly_one:
            return n == 1 ? MessageError::ok : MessageError::wrong_fd_count;
        case FdRule::at_most_one:
            return n <= 1 ? MessageError::ok : MessageError::wrong_fd_count;
        case FdRule::one_unless_nofd: {
            uint64_t value;
            std::memcpy(&value, msg.payload.data(), sizeof value);  // size checked before
            // vhost-user.rst SET_VRING_KICK: bit 8 set means "no fd is passed".
            const size_t expected = (value & kVringNoFdFlag) != 0 ? 0 : 1;
            return n == expected ? MessageError::ok : MessageError::wrong_fd_count;
        }
        case FdRule::one_per_region: {
            uint32_t nregions;
            std::memcpy(&nregions, msg.payload.data(), sizeof nregions);  // checked before
            return n == nregions ? MessageError::ok : MessageError::wrong_fd_count;
        }
    }
    return MessageError::wrong_fd_count;
}

}  // namespace vnet::vhost_user
