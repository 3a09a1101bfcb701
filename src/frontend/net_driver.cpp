#include "frontend/net_driver.hpp"

#include "packet/byte_order.hpp"

#include <cstdio>
#include <string>

#include "frontend/frame_format.hpp"
#include "frontend/packet_builder.hpp"
#include "io/eventfd.hpp"

namespace vnet::frontend {
namespace {

using vhost_user::ProtocolFeature;
using vhost_user::ProtocolFeatureSet;
using virtio::Feature;
using virtio::FeatureSet;

constexpr size_t kBufferAlign = 64;  // one cache line: buffers never share one
constexpr uint32_t kMergeableBufferBytes = 2048;

uint32_t round_up(uint32_t v, uint32_t align) {
    return (v + align - 1) / align * align;
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

uint32_t default_rx_buffer_bytes(bool mrg_rxbuf) {
    return mrg_rxbuf
               ? kMergeableBufferBytes
               : round_up(static_cast<uint32_t>(PacketBuilder::kNetHeaderLen) + kMaxUdpFrameLen,
                          1024);
}

NetDriver::NetDriver(FrontendSession session, const NetDriverConfig& config)
    : session_(std::move(session)) {
    if (config.packed ? !virtio::is_valid_packed_queue_size(config.queue_size)
                      : !virtio::is_valid_split_queue_size(config.queue_size)) {
        throw FrontendError("queue size " + std::to_string(config.queue_size) +
                            (config.packed ? " is not in 1..32768 (packed ring)"
                                           : " is not a power of two in 1..32768 (split ring)"));
    }
    config_ = config;
    negotiate(config);
    allocate(config);
    bring_up_rings();
}

void NetDriver::reconnect(FrontendSession session) {
    session_ = std::move(session);
    const FeatureSet before = negotiated_;
    const ProtocolFeatureSet protocol_before = protocol_;
    negotiate(config_);
    if (negotiated_ != before || protocol_ != protocol_before) {
        throw FrontendError(session_.name() + ": the restarted back end negotiated " +
                            hex(negotiated_.bits()) + ", before " + hex(before.bits()));
    }
    bring_up_rings();
}

void NetDriver::bring_up_rings() {
    const vhost_user::MemoryRegionDesc region = memory_->region();
    const int memory_fd = memory_->fd();
    session_.set_mem_table(std::span(&region, 1), std::span(&memory_fd, 1));
    if (protocol_.has(ProtocolFeature::inflight_shmfd)) {
        // vhost-user.rst "Inflight I/O tracking": the buffer is the back end's to make once (in
        // the layout of the ring format just negotiated); after a reconnect it goes back before
        // the rings.
        if (!inflight_.valid()) {
            inflight_ = session_.get_inflight_fd(2, config_.queue_size);
        } else {
            session_.set_inflight_fd(inflight_);
        }
    }
    for (uint32_t q : {kRxQueue, kTxQueue}) {
        start_ring(q);
    }
    // With PROTOCOL_FEATURES rings start disabled (vhost-user.rst, "Ring
    // states"); without it SET_FEATURES already enabled them.
    if (negotiated_.has(Feature::vhost_user_protocol_features)) {
        for (uint32_t q : {kRxQueue, kTxQueue}) {
            session_.set_vring_enable(q, true);
        }
    }
    if (protocol_.has(ProtocolFeature::status)) {
        using namespace device_status;
        session_.set_status(kAcknowledge | kDriver | kFeaturesOk | kDriverOk);
    }
    started_ = true;
}

NetDriver::~NetDriver() = default;

void NetDriver::negotiate(const NetDriverConfig& config) {
    session_.set_owner();
    offered_ = session_.get_features();
    const bool has_protocol_features = offered_.has(Feature::vhost_user_protocol_features);
    if (has_protocol_features) {
        const ProtocolFeatureSet offered = session_.get_protocol_features();
        protocol_ = ProtocolFeatureSet(offered.bits() & config.wanted_protocol_features.bits());
        session_.set_protocol_features(protocol_);
    }

    if (config.packed && !offered_.has(Feature::ring_packed)) {
        throw FrontendError(session_.name() +
                            ": back end does not offer VIRTIO_F_RING_PACKED (bit 34), which "
                            "packed rings need (offered " +
                            hex(offered_.bits()) + ")");
    }
    FeatureSet required = config.required_features.with(Feature::version_1);
    FeatureSet wanted = config.wanted_features.with(Feature::version_1);
    if (config.packed) {
        required = required.with(Feature::ring_packed);
        wanted = wanted.with(Feature::ring_packed);
    } else {
        // The ring format is the caller's choice, not the offer's.
        wanted = wanted.without(Feature::ring_packed);
    }
    const FeatureSet missing(required.bits() & ~offered_.bits());
    if (missing.bits() != 0) {
        throw FrontendError(session_.name() + ": back end does not offer required features " +
                            hex(missing.bits()) + " (offered " + hex(offered_.bits()) + ")");
    }
    negotiated_ = wanted & offered_;
    if (has_protocol_features) {
        // Acked like any feature bit, as QEMU and virtio-user do; it is what
        // makes rings start disabled until SET_VRING_ENABLE.
        negotiated_ = negotiated_.with(Feature::vhost_user_protocol_features);
    }

    using namespace device_status;
    const bool status = protocol_.has(ProtocolFeature::status);
    if (status) {
        session_.set_status(kAcknowledge | kDriver);
    }
    session_.set_features(negotiated_);
    if (negotiated_.has(Feature::net_mtu) && protocol_.has(ProtocolFeature::config)) {
        const std::vector<uint8_t> mtu =
            session_.get_config(vhost_user::kNetConfigMtuOffset, sizeof(uint16_t));
        mtu_ = packet::load_le16(mtu.data());
    }
    if (status) {
        session_.set_status(kAcknowledge | kDriver | kFeaturesOk);
        // virtio 1.2 §3.1.1 step 6: re-read status; FEATURES_OK still set
        // means the device accepted our subset.
        if ((session_.get_status() & kFeaturesOk) == 0) {
            throw FrontendError(session_.name() + ": back end rejected features " +
                                hex(negotiated_.bits()));
        }
    }
}

void NetDriver::allocate(const NetDriverConfig& config) {
    const uint16_t q = config.queue_size;
    tx_slot_bytes_ = round_up(config.tx_slot_bytes, kBufferAlign);
    rx_buffer_bytes_ = round_up(
        config.rx_buffer_bytes != 0 ? config.rx_buffer_bytes : default_rx_buffer_bytes(mrg_rxbuf()),
        kBufferAlign);
    const size_t ring_bytes = config.packed ? packed_ring_storage_bytes(q) : ring_storage_bytes(q);
    const size_t bytes = 2 * (ring_bytes + kRingAreaAlign) +
                         static_cast<size_t>(q) * (tx_slot_bytes_ + rx_buffer_bytes_) +
                         2 * kBufferAlign;
    memory_ = std::make_unique<DriverMemory>(bytes);

    const bool event_idx = negotiated_.has(Feature::ring_event_idx);
    for (uint32_t queue : {kRxQueue, kTxQueue}) {
        if (config.packed) {
            rings_[queue].emplace(std::in_place_type<DriverPackedRing>,
                                  allocate_packed_ring_layout(*memory_, q), event_idx);
        } else {
            rings_[queue].emplace(std::in_place_type<DriverSplitRing>,
                                  allocate_ring_layout(*memory_, q), event_idx);
        }
        kick_fds_[queue] = io::make_eventfd();
        call_fds_[queue] = io::make_eventfd();
    }
    tx_slots_ = memory_->allocate(static_cast<size_t>(q) * tx_slot_bytes_, kBufferAlign).data();
    rx_buffers_ = memory_->allocate(static_cast<size_t>(q) * rx_buffer_bytes_, kBufferAlign).data();
}

void NetDriver::start_ring(uint32_t queue) {
    // QEMU's order for either format; for packed, BASE carries both wrap
    // counters and ADDR names the two event areas (FrontendSession).
    visit_ring(queue, [&](const auto& r) {
        session_.set_vring_call(queue, call_fds_[queue].get());
        session_.set_vring_num(queue, r.size());
        session_.set_vring_base(queue, r.vring_base());
        session_.set_vring_addr(queue, r.layout());
        session_.set_vring_kick(queue, kick_fds_[queue].get());
    });
}

void NetDriver::kick(uint32_t queue) const {
    io::signal_eventfd(kick_fds_[queue].get());
}

bool NetDriver::stop() noexcept {
    if (!started_) {
        return true;
    }
    started_ = false;
    try {
        for (uint32_t q : {kRxQueue, kTxQueue}) {
            if (negotiated_.has(Feature::vhost_user_protocol_features)) {
                session_.set_vring_enable(q, false);
            }
            session_.get_vring_base(q);
        }
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace vnet::frontend
