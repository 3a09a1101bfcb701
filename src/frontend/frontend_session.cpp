#include "frontend/frontend_session.hpp"

#include <array>
#include <cerrno>
#include <cstring>

#include "frontend/socket_endpoint.hpp"

namespace vnet::frontend {

using vhost_user::Message;
using vhost_user::MessageHeader;
using vhost_user::ReceiveResult;
using vhost_user::Request;

FrontendSession::FrontendSession(UniqueFd socket, std::string name,
                                 std::chrono::milliseconds reply_timeout)
    : socket_(std::move(socket)), name_(std::move(name)), reply_timeout_(reply_timeout) {}

FrontendSession FrontendSession::connect(const std::string& path,
                                         std::chrono::milliseconds timeout) {
    return FrontendSession(connect_unix_socket(path, timeout), path);
}

FrontendSession FrontendSession::accept(const std::string& path,
                                        std::chrono::milliseconds timeout) {
    return FrontendSession(accept_unix_socket(path, timeout), path);
}

void FrontendSession::fail(Request request, const std::string& what) const {
    throw FrontendError(name_ + ": " + vhost_user::to_string(request) + ": " + what);
}

void FrontendSession::send(Request request, const void* payload, uint32_t size,
                           std::span<const int> fds, bool need_reply) {
    const uint32_t flags =
        MessageHeader::kVersion | (need_reply ? MessageHeader::kFlagNeedReply : 0);
    if (!vhost_user::send_message(socket_.get(), request, flags, payload, size, fds)) {
        fail(request, std::string("send failed: ") + std::strerror(errno));
    }
}

void FrontendSession::receive_reply(Request request, Message& reply, size_t fds_expected) {
    const ReceiveResult r = vhost_user::receive_message(socket_.get(), reply, reply_timeout_);
    if (r != ReceiveResult::message) {
        fail(request, std::string("no reply: ") + vhost_user::to_string(r));
    }
    if (reply.fd_count != fds_expected) {
        reply.close_fds();
        fail(request, "reply carries file descriptors");
    }
    if (reply.request() != request) {
        fail(request, std::string("reply is for ") + vhost_user::to_string(reply.request()));
    }
    // vhost-user.rst: a reply has version 1 and REPLY set, nothing else
    // (QEMU's vhost_user_read_header rejects any other flags).
    if (reply.header.flags != vhost_user::kReplyFlags) {
        fail(request, "reply flags " + std::to_string(reply.header.flags) + ", expected 5");
    }
}

uint64_t FrontendSession::request_u64(Request request) {
    send(request, nullptr, 0, {}, false);
    Message reply;
    receive_reply(request, reply);
    uint64_t value = 0;
    if (!reply.read_payload(value)) {
        fail(request, "reply size " + std::to_string(reply.size()) + ", expected 8");
    }
    return value;
}

void FrontendSession::send_no_reply(Request request, const void* payload, uint32_t size,
                                    std::span<const int> fds) {
    send(request, payload, size, fds, reply_ack_);
    if (!reply_ack_) {
        return;
    }
    Message reply;
    receive_reply(request, reply);
    uint64_t status = 0;
    if (!reply.read_payload(status)) {
        fail(request, "ack size " + std::to_string(reply.size()) + ", expected 8");
    }
    if (status != 0) {
        fail(request, "back end refused (status " + std::to_string(status) + ")");
    }
}

void FrontendSession::set_owner() {
    send_no_reply(Request::set_owner, nullptr, 0);
}

virtio::FeatureSet FrontendSession::get_features() {
    return virtio::FeatureSet(request_u64(Request::get_features));
}

void FrontendSession::set_features(virtio::FeatureSet features) {
    const uint64_t bits = features.bits();
    send_no_reply(Request::set_features, &bits, sizeof bits);
}

vhost_user::ProtocolFeatureSet FrontendSession::get_protocol_features() {
    return vhost_user::ProtocolFeatureSet(request_u64(Request::get_protocol_features));
}

void FrontendSession::set_protocol_features(vhost_user::ProtocolFeatureSet features) {
    const uint64_t bits = features.bits();
    // REPLY_ACK is not in force until the back end has processed this very
    // message, so it is never acknowledged itself (QEMU does the same).
    reply_ack_ = false;
    send_no_reply(Request::set_protocol_features, &bits, sizeof bits);
    reply_ack_ = features.has(vhost_user::ProtocolFeature::reply_ack);
}

void FrontendSession::set_mem_table(std::span<const vhost_user::MemoryRegionDesc> regions,
                                    std::span<const int> fds) {
    if (regions.empty() || regions.size() > vhost_user::kMaxMemTableRegions ||
        regions.size() != fds.size()) {
        fail(Request::set_mem_table, "needs 1..8 regions with one fd each");
    }
    vhost_user::MemoryTable table{};
    table.nregions = static_cast<uint32_t>(regions.size());
    for (size_t i = 0; i < regions.size(); ++i) {
        table.regions[i] = regions[i];
    }
    // The payload covers only the regions in use, as QEMU and DPDK send it.
    const auto size = static_cast<uint32_t>(offsetof(vhost_user::MemoryTable, regions) +
                                            regions.size() * sizeof(vhost_user::MemoryRegionDesc));
    send_no_reply(Request::set_mem_table, &table, size, fds);
}

void FrontendSession::set_vring_num(uint32_t index, uint32_t num) {
    const vhost_user::VringState state{index, num};
    send_no_reply(Request::set_vring_num, &state, sizeof state);
}

void FrontendSession::set_vring_base(uint32_t index, uint32_t base) {
    const vhost_user::VringState state{index, base};
    send_no_reply(Request::set_vring_base, &state, sizeof state);
}

uint32_t FrontendSession::get_vring_base(uint32_t index) {
    const vhost_user::VringState state{index, 0};
    send(Request::get_vring_base, &state, sizeof state, {}, false);
    Message reply;
    receive_reply(Request::get_vring_base, reply);
    vhost_user::VringState answer{};
    if (!reply.read_payload(answer)) {
        fail(Request::get_vring_base,
             "reply size " + std::to_string(reply.size()) + ", expected 8");
    }
    if (answer.index != index) {
        fail(Request::get_vring_base, "reply is for vring " + std::to_string(answer.index));
    }
    return answer.num;
}

void FrontendSession::set_vring_addr(uint32_t index, const DriverRingLayout& layout) {
    const vhost_user::VringAddr addr{
        .index = index,
        .flags = 0,
        .desc_user_addr = reinterpret_cast<uintptr_t>(layout.desc),
        .used_user_addr = reinterpret_cast<uintptr_t>(layout.used),
        .avail_user_addr = reinterpret_cast<uintptr_t>(layout.avail),
        .log_guest_addr = 0,
    };
    send_no_reply(Request::set_vring_addr, &addr, sizeof addr);
}

void FrontendSession::set_vring_addr(uint32_t index, const DriverPackedRingLayout& layout) {
    const vhost_user::VringAddr addr{
        .index = index,
        .flags = 0,
        .desc_user_addr = reinterpret_cast<uintptr_t>(layout.desc),
        .used_user_addr = reinterpret_cast<uintptr_t>(layout.device_event),
        .avail_user_addr = reinterpret_cast<uintptr_t>(layout.driver_event),
        .log_guest_addr = 0,
    };
    send_no_reply(Request::set_vring_addr, &addr, sizeof addr);
}

void FrontendSession::send_vring_fd(Request request, uint32_t index, int fd) {
    if (index > vhost_user::kVringIndexMask) {
        fail(request, "vring index " + std::to_string(index) + " does not fit in 8 bits");
    }
    const uint64_t payload = index | (fd < 0 ? vhost_user::kVringNoFdFlag : 0);
    const std::array<int, 1> fds{fd};
    send_no_reply(request, &payload, sizeof payload,
                  fd < 0 ? std::span<const int>{} : std::span<const int>(fds));
}

void FrontendSession::set_vring_kick(uint32_t index, int fd) {
    send_vring_fd(Request::set_vring_kick, index, fd);
}

void FrontendSession::set_vring_call(uint32_t index, int fd) {
    send_vring_fd(Request::set_vring_call, index, fd);
}

void FrontendSession::set_vring_enable(uint32_t index, bool enable) {
    const vhost_user::VringState state{index, enable ? 1u : 0u};
    send_no_reply(Request::set_vring_enable, &state, sizeof state);
}

uint8_t FrontendSession::get_status() {
    const uint64_t status = request_u64(Request::get_status);
    if (status > vhost_user::kMaxDeviceStatus) {
        fail(Request::get_status, "status " + std::to_string(status) + " does not fit in 8 bits");
    }
    return static_cast<uint8_t>(status);
}

std::vector<uint8_t> FrontendSession::get_config(uint32_t offset, uint32_t size) {
    const vhost_user::DeviceConfigHeader h{offset, size, 0};
    std::array<uint8_t, sizeof h + vhost_user::kMaxConfigSize> payload{};
    std::memcpy(payload.data(), &h, sizeof h);
    send(Request::get_config, payload.data(), static_cast<uint32_t>(sizeof h) + size, {}, false);
    Message reply;
    receive_reply(Request::get_config, reply);
    // vhost-user.rst GET_CONFIG: the reply repeats the header, then the bytes.
    vhost_user::DeviceConfigHeader got{};
    if (reply.size() != sizeof h + size) {
        fail(Request::get_config, "reply size " + std::to_string(reply.size()) + ", expected " +
                                      std::to_string(sizeof h + size));
    }
    std::memcpy(&got, reply.payload.data(), sizeof got);
    if (got.offset != offset || got.size != size) {
        fail(Request::get_config, "reply is for another range");
    }
    return {reply.payload.begin() + sizeof h, reply.payload.begin() + sizeof h + size};
}

void FrontendSession::set_status(uint8_t status) {
    const uint64_t value = status;
    send_no_reply(Request::set_status, &value, sizeof value);
}

InflightBuffer FrontendSession::get_inflight_fd(uint16_t num_queues, uint16_t queue_size) {
    const vhost_user::InflightDescription ask{0, 0, num_queues, queue_size, 0};
    send(Request::get_inflight_fd, &ask, sizeof ask, {}, false);
    Message reply;
    receive_reply(Request::get_inflight_fd, reply, 1);
    InflightBuffer b;
    b.fd = reply.take_fd(0);
    if (!reply.read_payload(b.description)) {
        fail(Request::get_inflight_fd, "reply size " + std::to_string(reply.size()));
    }
    if (b.description.num_queues != num_queues || b.description.queue_size != queue_size ||
        b.description.mmap_size == 0) {
        fail(Request::get_inflight_fd, "reply describes another buffer");
    }
    return b;
}

void FrontendSession::set_inflight_fd(const InflightBuffer& buffer) {
    const int fd = buffer.fd.get();
    send_no_reply(Request::set_inflight_fd, &buffer.description, sizeof buffer.description,
                  std::span(&fd, 1));
}

}  // namespace vnet::frontend
