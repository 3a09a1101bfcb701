// The declarative vhost-user request table (DPDK's VHOST_MESSAGE_HANDLERS,
// made exact): for every request id, its handler, the fds it takes, its exact
// payload size, whether it has its own reply, and the protocol feature that
// must be negotiated before it may be sent. The dispatcher
// (VhostUserDevice::handle_message) enforces all of it before a handler runs,
// so handlers only check meaning.
#pragma once

#include <cstdint>
#include <optional>

#include "vhost_user/connection.hpp"
#include "vhost_user/message.hpp"
#include "vhost_user/message_error.hpp"

namespace vnet::vhost_user {

class VhostUserDevice;

// How many fds a request takes.
enum class FdRule : uint8_t {
    none,             // any fd is refused (and closed)
    exactly_one,      // ADD_MEM_REG, SET_LOG_BASE, SET_LOG_FD, SET_BACKEND_REQ_FD
    one_unless_nofd,  // KICK/CALL/ERR: one fd, or none when bit 8 (NOFD) is set
    one_per_region,   // SET_MEM_TABLE: exactly nregions fds
    at_most_one,      // REM_MEM_REG: QEMU sends none, older front ends one
};

enum class PayloadRule : uint8_t {
    exact,          // header.size == payload_size
    memory_table,   // 8 + 32*nregions (what QEMU and virtio-user send) or the full struct
    device_config,  // DeviceConfigHeader + its size bytes, a range inside kMaxConfigSize
    unchecked,      // unsupported requests: refused before the size matters
};

using RequestHandler = MessageError (VhostUserDevice::*)(Message& request, Message& reply);

struct RequestSpec {
    Request request;
    const char* name;
    RequestHandler handler;  // nullptr: not supported, always refused
    FdRule fds;
    PayloadRule payload_rule;
    uint32_t payload_size;  // for PayloadRule::exact
    bool has_reply;         // the request has its own reply (REPLY_ACK does not apply)
    std::optional<ProtocolFeature> needs;
    // A refusal is answered with a zero-length payload instead of breaking
    // the device (vhost-user.rst GET_CONFIG: "uses zero length of payload
    // to indicate an error").
    bool refused_with_empty_reply = false;
};

// The entry for `id`, or nullptr if id is not a known request.
const RequestSpec* find_request_spec(uint32_t id);

// Framing checks the dispatcher runs before the handler.
MessageError check_payload_size(const RequestSpec& spec, const Message& msg);
MessageError check_fd_count(const RequestSpec& spec, const Message& msg);

// Bytes of a SET_MEM_TABLE payload with `nregions` regions, as QEMU sends it.
constexpr uint32_t memory_table_payload_size(uint32_t nregions) {
    return 8 + static_cast<uint32_t>(sizeof(MemoryRegionDesc)) * nregions;
}

}  // namespace vnet::vhost_user
