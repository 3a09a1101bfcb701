// NetDriver: a virtio-net device as a VM's driver brings it up over
// vhost-user, with one queue pair (vring 0 = RX, vring 1 = TX; virtio 1.2
// §5.1.2). It owns everything the back end is told about: the guest memory,
// both rings, their kick/call eventfds and a fixed buffer area per ring
// (one TX slot and one RX buffer per descriptor).
//
// Bring-up (the constructor) follows DPDK virtio-user and QEMU:
//   SET_OWNER, GET_FEATURES, GET/SET_PROTOCOL_FEATURES, [SET_STATUS
//   ACK|DRIVER], SET_FEATURES, [SET_STATUS FEATURES_OK], SET_MEM_TABLE, per
//   ring CALL, NUM, BASE, ADDR, KICK (kick last: it starts the ring), then
//   SET_VRING_ENABLE 1 per ring, [SET_STATUS DRIVER_OK].
// Both rings are always set up: DPDK treats a device as ready only when
// the first pair is complete.
//
// Restart of the back end (INFLIGHT_SHMFD, when wanted and offered): at
// bring-up, after the memory table, GET_INFLIGHT_FD for both rings; the
// buffer is kept. reconnect() brings the same device up on a new
// connection to a restarted back end, memory and rings untouched, with
// SET_INFLIGHT_FD before the rings, so the back end resumes the chains its
// previous life took and never completed (QEMU vhost-user-blk's order).
//
// Ring format: split (virtio 1.2 §2.7), or packed (§2.8) when the config
// asks for it, which negotiates VIRTIO_F_RING_PACKED and fails if the back
// end does not offer it. Both rings of a device have the format negotiated
// once at bring-up, so callers pick the ring type once (ring<R>(), or
// visit_ring) and run a loop templated on it: the datapath never dispatches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <variant>

#include "common/unique_fd.hpp"
#include "frontend/driver_memory.hpp"
#include "frontend/driver_packed_ring.hpp"
#include "frontend/driver_split_ring.hpp"
#include "frontend/frontend_session.hpp"
#include "vhost_user/message.hpp"
#include "virtio/features.hpp"

namespace vnet::frontend {

struct NetDriverConfig {
    uint16_t queue_size = 256;  // split: a power of two; packed: any of 1..32768
    // Packed rings: VIRTIO_F_RING_PACKED is wanted and required.
    bool packed = false;
    // Features we would like; the negotiated set is wanted & offered.
    // VERSION_1 is always wanted and required.
    virtio::FeatureSet wanted_features{virtio::Feature::version_1};
    // Features the run cannot do without (e.g. CSUM + HOST_TSO4 for GSO).
    virtio::FeatureSet required_features{virtio::Feature::version_1};
    vhost_user::ProtocolFeatureSet wanted_protocol_features{vhost_user::ProtocolFeature::reply_ack,
                                                            vhost_user::ProtocolFeature::status};
    uint32_t tx_slot_bytes = 2048;  // virtio-net header + largest TX frame
    uint32_t rx_buffer_bytes = 0;   // 0 = default_rx_buffer_bytes(mrg_rxbuf)
};

// Linux virtio_net's choice: with MRG_RXBUF small buffers that big packets
// span; without it, each buffer must hold the largest frame we accept.
uint32_t default_rx_buffer_bytes(bool mrg_rxbuf);

// Either driver ring; which one is fixed for the device's life.
using AnyDriverRing = std::variant<DriverSplitRing, DriverPackedRing>;

class NetDriver {
public:
    static constexpr uint32_t kRxQueue = 0;
    static constexpr uint32_t kTxQueue = 1;

    // Negotiates, allocates and starts both rings. Throws FrontendError or
    // std::system_error.
    NetDriver(FrontendSession session, const NetDriverConfig& config);
    ~NetDriver();
    NetDriver(const NetDriver&) = delete;
    NetDriver& operator=(const NetDriver&) = delete;

    virtio::FeatureSet offered_features() const { return offered_; }
    virtio::FeatureSet negotiated_features() const { return negotiated_; }
    vhost_user::ProtocolFeatureSet negotiated_protocol_features() const { return protocol_; }
    bool mrg_rxbuf() const { return negotiated_.has(virtio::Feature::net_mrg_rxbuf); }
    bool packed() const { return negotiated_.has(virtio::Feature::ring_packed); }
    // The device's MTU (virtio_net_config.mtu), read with GET_CONFIG when
    // VIRTIO_NET_F_MTU and PROTOCOL_F_CONFIG were both negotiated.
    std::optional<uint16_t> mtu() const { return mtu_; }
    const FrontendSession& session() const { return session_; }

    // The ring as the type negotiated (std::bad_variant_access for the other).
    template <DriverRing R>
    R& ring(uint32_t queue) {
        return std::get<R>(*rings_[queue]);
    }
    template <DriverRing R>
    R& rx_ring() {
        return ring<R>(kRxQueue);
    }
    template <DriverRing R>
    R& tx_ring() {
        return ring<R>(kTxQueue);
    }
    // Calls f(ring) with the ring as its own type.
    template <typename F>
    decltype(auto) visit_ring(uint32_t queue, F&& f) {
        return std::visit(std::forward<F>(f), *rings_[queue]);
    }

    // The fixed buffer for descriptor cookie `slot` (< queue size).
    std::span<std::byte> tx_slot(uint32_t slot) const {
        return {tx_slots_ + static_cast<size_t>(slot) * tx_slot_bytes_, tx_slot_bytes_};
    }
    std::span<std::byte> rx_buffer(uint32_t slot) const {
        return {rx_buffers_ + static_cast<size_t>(slot) * rx_buffer_bytes_, rx_buffer_bytes_};
    }
    uint32_t tx_slot_bytes() const { return tx_slot_bytes_; }
    uint32_t rx_buffer_bytes() const { return rx_buffer_bytes_; }
    uint64_t gpa_of(const void* p) const { return memory_->gpa_of(p); }

    // Notifies the device (one eventfd write).
    void kick(uint32_t queue) const;
    int call_fd(uint32_t queue) const { return call_fds_[queue].get(); }

    // Orderly stop, as QEMU does it: SET_VRING_ENABLE 0 and GET_VRING_BASE
    // per ring, so the back end stops touching our memory before it goes.
    // Returns false if the back end did not answer (it may be gone already).
    bool stop() noexcept;

    // The back end died (the socket hung up): the same device on `session`,
    // a new connection to its next life. Negotiates the same features
    // again (FrontendError if they differ), SET_MEM_TABLE, SET_INFLIGHT_FD
    // with the kept buffer, then each ring from where it is.
    void reconnect(FrontendSession session);
    // Valid once GET_INFLIGHT_FD was answered (INFLIGHT_SHMFD negotiated).
    const InflightBuffer& inflight() const { return inflight_; }

private:
    void negotiate(const NetDriverConfig& config);
    void allocate(const NetDriverConfig& config);
    void start_ring(uint32_t queue);
    // SET_MEM_TABLE, the inflight buffer, every ring, ENABLE and DRIVER_OK.
    void bring_up_rings();

    FrontendSession session_;
    virtio::FeatureSet offered_;
    virtio::FeatureSet negotiated_;
    vhost_user::ProtocolFeatureSet protocol_;
    std::unique_ptr<DriverMemory> memory_;
    std::array<std::optional<AnyDriverRing>, 2> rings_;
    std::array<UniqueFd, 2> kick_fds_;
    std::array<UniqueFd, 2> call_fds_;
    std::byte* tx_slots_ = nullptr;
    std::byte* rx_buffers_ = nullptr;
    uint32_t tx_slot_bytes_ = 0;
    uint32_t rx_buffer_bytes_ = 0;
    bool started_ = false;
    std::optional<uint16_t> mtu_;
    NetDriverConfig config_;
    InflightBuffer inflight_;
};

}  // namespace vnet::frontend
