// FrontendSession: the front-end (VMM) side of one vhost-user connection,
// the part QEMU's hw/virtio/vhost-user.c and DPDK virtio-user play. One
// method per request; each sends the message, and waits for and checks its
// reply: exact flags (0x5, as QEMU demands), the same request id, the exact
// payload size, and a zero status for REPLY_ACK acknowledgements.
//
// Set-up code only, so failures are exceptions (FrontendError) that name
// the socket and the request.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "frontend/driver_packed_ring_layout.hpp"
#include "frontend/driver_ring_layout.hpp"
#include "vhost_user/connection.hpp"
#include "vhost_user/message.hpp"
#include "virtio/features.hpp"

namespace vnet::frontend {

class FrontendError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// virtio 1.2 §2.1 device status bits, for SET_STATUS.
namespace device_status {
inline constexpr uint8_t kAcknowledge = 1;
inline constexpr uint8_t kDriver = 2;
inline constexpr uint8_t kDriverOk = 4;
inline constexpr uint8_t kFeaturesOk = 8;
}  // namespace device_status

// The inflight buffer a back end gave (GET_INFLIGHT_FD): kept by the front
// end across a back-end restart and handed to the next one (SET_INFLIGHT_FD).
struct InflightBuffer {
    vhost_user::InflightDescription description{};
    UniqueFd fd;
    bool valid() const { return fd.valid(); }
};

class FrontendSession {
public:
    static constexpr std::chrono::milliseconds kDefaultReplyTimeout{5000};

    // `name` labels errors and logs (normally the socket path).
    FrontendSession(UniqueFd socket, std::string name,
                    std::chrono::milliseconds reply_timeout = kDefaultReplyTimeout);

    // Dials a back end's listening socket, retrying until `timeout`.
    static FrontendSession connect(const std::string& path, std::chrono::milliseconds timeout);
    // Listens on `path` and takes the first back end that connects.
    static FrontendSession accept(const std::string& path, std::chrono::milliseconds timeout);

    const std::string& name() const { return name_; }
    int socket_fd() const { return socket_.get(); }

    // Once set, every request without a reply of its own asks for an
    // acknowledgement (NEED_REPLY) and waits for it. set_protocol_features
    // turns it on when REPLY_ACK is among the accepted bits.
    void set_reply_ack(bool on) { reply_ack_ = on; }
    bool reply_ack() const { return reply_ack_; }

    void set_owner();
    virtio::FeatureSet get_features();
    void set_features(virtio::FeatureSet features);
    vhost_user::ProtocolFeatureSet get_protocol_features();
    void set_protocol_features(vhost_user::ProtocolFeatureSet features);
    // One region and one fd per entry, in order (at most 8).
    void set_mem_table(std::span<const vhost_user::MemoryRegionDesc> regions,
                       std::span<const int> fds);
    void set_vring_num(uint32_t index, uint32_t num);
    void set_vring_base(uint32_t index, uint32_t base);
    uint32_t get_vring_base(uint32_t index);
    // Ring areas are given as front-end virtual addresses (our gpa == VA).
    void set_vring_addr(uint32_t index, const DriverRingLayout& layout);
    // Packed: the avail address names the driver event area, used the device one.
    void set_vring_addr(uint32_t index, const DriverPackedRingLayout& layout);
    // fd < 0 sends the NOFD flag (poll mode / no interrupts).
    void set_vring_kick(uint32_t index, int fd);
    void set_vring_call(uint32_t index, int fd);
    void set_vring_enable(uint32_t index, bool enable);
    uint8_t get_status();
    void set_status(uint8_t status);
    // GET_CONFIG (PROTOCOL_F_CONFIG): `size` bytes of the device's config
    // space from `offset` (size <= kMaxConfigSize).
    std::vector<uint8_t> get_config(uint32_t offset, uint32_t size);
    // INFLIGHT_SHMFD: the back end's buffer for `num_queues` rings of
    // `queue_size`, and handing it back after a reconnect (before the rings).
    InflightBuffer get_inflight_fd(uint16_t num_queues, uint16_t queue_size);
    void set_inflight_fd(const InflightBuffer& buffer);

private:
    void send(vhost_user::Request request, const void* payload, uint32_t size,
              std::span<const int> fds, bool need_reply);
    // Sends a request that has no reply of its own; waits for the
    // acknowledgement when reply_ack is on.
    void send_no_reply(vhost_user::Request request, const void* payload, uint32_t size,
                       std::span<const int> fds = {});
    // A reply carries no fds, except those that carry exactly `fds_expected`.
    void receive_reply(vhost_user::Request request, vhost_user::Message& reply,
                       size_t fds_expected = 0);
    uint64_t request_u64(vhost_user::Request request);
    void send_vring_fd(vhost_user::Request request, uint32_t index, int fd);
    [[noreturn]] void fail(vhost_user::Request request, const std::string& what) const;

    UniqueFd socket_;
    std::string name_;
    std::chrono::milliseconds reply_timeout_;
    bool reply_ack_ = false;
};

}  // namespace vnet::frontend
