// VhostUserDevice handlers for per-device settings: features, protocol
// features, ownership, status, MTU and the config space, RARP, queue
// count, side channels.
#include <array>
#include <cstring>

#include "packet/byte_order.hpp"
#include "vhost_user/device.hpp"

namespace vnet::vhost_user {
namespace {

uint64_t read_u64(const Message& m) {
    uint64_t v = 0;
    m.read_payload(v);  // size checked by the dispatcher
    return v;
}

// virtio 1.2 §5.1.4.1: the device MTU must be at least 68; it is a u16 field.
constexpr uint64_t kMinMtu = 68;
constexpr uint64_t kMaxMtu = 65535;

}  // namespace

MessageError VhostUserDevice::handle_get_features(Message&, Message& reply) {
    reply.write_payload(offered_features_.bits());
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_features(Message& m, Message&) {
    const virtio::FeatureSet acked(read_u64(m));
    // vhost-user.rst SET_FEATURES: only bits the back end offered.
    if (!acked.is_subset_of(offered_features_)) {
        return MessageError::features_not_offered;
    }
    // vhost-user.rst: only LOG_ALL may change on a running device (live
    // migration turns it on and off). QEMU sends the same value once per
    // queue pair: that is fine.
    constexpr auto kLogAll = virtio::Feature::vhost_log_all;
    if (features_set_ && acked.without(kLogAll) != acked_features_.without(kLogAll) &&
        any_queue_started()) {
        return MessageError::features_changed_while_running;
    }
    // An inflight buffer has the layout of the ring format it came under
    // (device_inflight.cpp): the format may not change beneath it.
    if (inflight_ && inflight_->model.index() != virtio::ring_model(acked).index()) {
        return MessageError::inflight_ring_format_mismatch;
    }
    const bool was_logging = logging();
    acked_features_ = acked;
    features_set_ = true;
    if (was_logging != logging()) {
        const bool ok = apply_logging_change(was_logging, dirty_log_.get());
        if (!logging()) {
            dirty_log_.reset();  // the next migration brings its own (SET_LOG_BASE)
        }
        return ok ? MessageError::ok : MessageError::ring_not_in_guest_memory;
    }
    return update_all_queues() ? MessageError::ok : MessageError::ring_not_in_guest_memory;
}

MessageError VhostUserDevice::handle_set_owner(Message&, Message&) {
    // Start of a session; QEMU sends it once per device, virtio-user once.
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_reset_owner(Message&, Message&) {
    // vhost-user.rst: deprecated; we reset the rings and features but keep the
    // session (protocol features, memory table) as the spec allows.
    stop_all_queues();
    for (Queue& q : queues_) {
        q = Queue{};
    }
    acked_features_ = {};
    features_set_ = false;
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_log_fd(Message&, Message&) {
    // We keep no dirty log; the dispatcher closes the fd (DPDK does the same).
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_protocol_features(Message&, Message& reply) {
    reply.write_payload(offered_protocol_.bits());
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_protocol_features(Message& m, Message&) {
    const ProtocolFeatureSet acked(read_u64(m));
    if (!acked.is_subset_of(offered_protocol_)) {
        return MessageError::protocol_features_not_offered;
    }
    acked_protocol_ = acked;
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_queue_num(Message&, Message& reply) {
    // vhost-user.rst GET_QUEUE_NUM: the number of queue pairs for net.
    reply.write_payload(uint64_t{max_queue_pairs()});
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_send_rarp(Message& m, Message&) {
    // vhost-user.rst SEND_RARP: the MAC is the first 6 bytes of the u64.
    MacAddress mac;
    std::memcpy(mac.data(), m.payload.data(), mac.size());
    rarp_mac_ = mac;
    if (observer_ != nullptr) {
        observer_->on_rarp_requested(*this, mac);
    }
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_net_set_mtu(Message& m, Message&) {
    const uint64_t mtu = read_u64(m);
    if (mtu < kMinMtu || mtu > kMaxMtu) {
        return MessageError::mtu_out_of_range;
    }
    mtu_ = static_cast<uint16_t>(mtu);
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_backend_req_fd(Message& m, Message&) {
    // Kept for the life of the session; we send nothing on it yet.
    backend_req_ = m.take_fd(0);
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_max_mem_slots(Message&, Message& reply) {
    reply.write_payload(kAdvertisedMemSlots);
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_set_status(Message& m, Message&) {
    const uint64_t status = read_u64(m);
    // vhost-user.rst SET_STATUS: the value must fit in a u8.
    if (status > kMaxDeviceStatus) {
        return MessageError::status_out_of_range;
    }
    status_ = static_cast<uint8_t>(status);
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_config(Message& m, Message& reply) {
    DeviceConfigHeader h;
    std::memcpy(&h, m.payload.data(), sizeof h);  // range checked by the table
    // virtio 1.2 §5.1.4: the net config space; what we do not fill reads 0
    // (no MAC of our own: the guest picks one).
    std::array<uint8_t, kMaxConfigSize> space{};
    packet::store_le16(space.data() + kNetConfigStatusOffset, kNetStatusLinkUp);
    packet::store_le16(space.data() + kNetConfigMaxQueuePairsOffset,
                       static_cast<uint16_t>(max_queue_pairs()));
    packet::store_le16(space.data() + kNetConfigMtuOffset, config_.mtu.value_or(0));
    std::memcpy(reply.payload.data(), &h, sizeof h);
    std::memcpy(reply.payload.data() + sizeof h, space.data() + h.offset, h.size);
    reply.header.size = static_cast<uint32_t>(sizeof h) + h.size;
    return MessageError::ok;
}

MessageError VhostUserDevice::handle_get_status(Message&, Message& reply) {
    reply.write_payload(uint64_t{status_});
    return MessageError::ok;
}

}  // namespace vnet::vhost_user
