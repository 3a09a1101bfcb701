// VhostUserDevice: construction, the dispatcher (reply policy), the broken
// state and the queue ready/stopped transitions. Handlers live in
// device_features.cpp, device_vring.cpp and device_memory.cpp.
#include "vhost_user/device.hpp"

#include <algorithm>

#include "common/guest_fault.hpp"
#include "vhost_user/request_table.hpp"
#include "vhost_user/vring_base_text.hpp"
#include "virtio/ring/shared_access.hpp"

namespace vnet::vhost_user {
namespace {

// A refusal is logged; a peer that sends nothing but bad (acked) messages
// must not flood the log, so each device logs at most this many.
constexpr uint32_t kMaxLoggedRefusals = 32;

virtio::FeatureSet compute_offered_features(const DeviceConfig& c) {
    virtio::FeatureSet offered = c.features & kDefaultDeviceFeatures;
    if (c.max_queue_pairs > 1) {
        offered = offered.with(virtio::Feature::net_mq);
    }
    if (c.mtu.has_value()) {
        offered = offered.with(virtio::Feature::net_mtu);
    }
    // vhost-user.rst: bit 30 tells the front end it may use GET_PROTOCOL_FEATURES;
    // LOG_ALL that it may migrate the guest (QEMU blocks migration without it).
    return offered.with(virtio::Feature::vhost_user_protocol_features)
        .with(virtio::Feature::vhost_log_all);
}

// SET_VRING_ADDR's three addresses, named by area.
virtio::RingAddresses ring_addresses(const VringAddr& a) {
    return {a.desc_user_addr, a.avail_user_addr, a.used_user_addr};
}

}  // namespace

MessageError to_message_error(virtio::BaseError e) {
    switch (e) {
        case virtio::BaseError::ok:
            return MessageError::ok;
        case virtio::BaseError::avail_index_out_of_range:
            return MessageError::vring_base_avail_out_of_range;
        case virtio::BaseError::used_index_out_of_range:
            return MessageError::vring_base_used_out_of_range;
        case virtio::BaseError::in_flight_exceeds_ring:
            return MessageError::vring_base_in_flight_exceeds_ring;
        case virtio::BaseError::wider_than_format:
            return MessageError::vring_base_out_of_range;
        case virtio::BaseError::no_queue_size:
            return MessageError::vring_base_without_num;
    }
    return MessageError::vring_base_avail_out_of_range;  // unreachable; fail closed
}

VhostUserDevice::VhostUserDevice(DeviceConfig config, QueueObserver* observer)
    : config_(std::move(config)),
      observer_(observer),
      log_(make_logger(config_.name)),
      memory_(std::make_shared<const virtio::GuestMemoryMap>()) {
    config_.max_queue_pairs = std::clamp<uint32_t>(config_.max_queue_pairs, 1, kMaxQueuePairs);
    offered_features_ = compute_offered_features(config_);
    offered_protocol_ =
        ProtocolFeatureSet(config_.protocol_features.bits() & kSupportedProtocolFeatures.bits());
    if (config_.mtu.has_value()) {
        offered_protocol_ = offered_protocol_.with(ProtocolFeature::config);
    }
    queues_.resize(2 * config_.max_queue_pairs);
    install_guest_fault_handler();  // we read guest memory when a ring starts
}

VhostUserDevice::~VhostUserDevice() {
    stop_all_queues();
}

DispatchResult VhostUserDevice::handle_message(Message& request, Message& reply) {
    const RequestSpec* spec = find_request_spec(request.header.request);
    const MessageError error = run_request(spec, request, reply);
    // Hostile-input rule 3: fds a handler did not keep are closed on every path.
    request.close_fds();
    last_error_ = error;
    return apply_reply_policy(spec, request, error, reply);
}

MessageError VhostUserDevice::run_request(const RequestSpec* spec, Message& request,
                                          Message& reply) {
    if (broken_) {
        return MessageError::device_broken;
    }
    if (spec == nullptr) {
        return MessageError::unknown_request;
    }
    if (request.is_reply()) {
        return MessageError::reply_flag_on_request;
    }
    // Hostile-input rule 6: answer only what was negotiated.
    if (spec->needs.has_value() && !acked_protocol_.has(*spec->needs)) {
        return MessageError::protocol_feature_not_negotiated;
    }
    if (spec->handler == nullptr) {
        return MessageError::unsupported_request;
    }
    if (MessageError e = check_payload_size(*spec, request); e != MessageError::ok) {
        return e;
    }
    if (MessageError e = check_fd_count(*spec, request); e != MessageError::ok) {
        return e;
    }
    reply.header = {request.header.request, kReplyFlags, 0};
    return (this->*spec->handler)(request, reply);
}

DispatchResult VhostUserDevice::apply_reply_policy(const RequestSpec* spec, const Message& request,
                                                   MessageError error, Message& reply) {
    DispatchResult result;
    result.error = error;
    const bool own_reply = spec != nullptr && spec->has_reply;
    // vhost-user.rst REPLY_ACK: with NEED_REPLY, u64 0 on success, non-zero on
    // failure, unless the request has its own reply.
    const bool ack =
        !own_reply && request.needs_reply() && acked_protocol_.has(ProtocolFeature::reply_ack);
    auto set_ack = [&](uint64_t value) {
        reply.header = {request.header.request, kReplyFlags, 0};
        reply.write_payload(value);
        result.has_reply = true;
    };

    if (error == MessageError::ok && !broken_) {
        if (own_reply) {
            reply.header.request = request.header.request;
            reply.header.flags = kReplyFlags;  // the handler wrote payload and size
            result.has_reply = true;
        } else if (ack) {
            set_ack(0);
        }
        return result;
    }
    if (broken_) {  // broken before or by this request: drop the connection
        result.disconnect = true;
        return result;
    }
    const char* name = spec != nullptr ? spec->name : "UNKNOWN";
    if (refusals_logged_ < kMaxLoggedRefusals) {
        log_->warn("refused {} ({}): {}", name, request.header.request, to_string(error));
        if (++refusals_logged_ == kMaxLoggedRefusals) {
            log_->warn("further refusals on this connection are not logged");
        }
    }
    if (ack) {
        set_ack(1);
        return result;
    }
    if (own_reply && spec->refused_with_empty_reply) {
        // The request's own way to say no (GET_CONFIG): the front end learns
        // it failed and stays in step, so the connection goes on.
        reply.header = {request.header.request, kReplyFlags, 0};
        result.has_reply = true;
        return result;
    }
    // The front end cannot learn that this failed (no ack, or it waits for a
    // reply we cannot give): carrying on would desynchronise it.
    mark_broken(std::string(name) + " refused (" + to_string(error) +
                ") and the front end cannot be told");
    result.disconnect = true;
    return result;
}

void VhostUserDevice::mark_broken(const std::string& reason) {
    if (broken_) {
        return;
    }
    broken_ = true;
    broken_reason_ = reason;
    log_->error("device broken: {}", reason);
    stop_all_queues();
}

bool VhostUserDevice::queue_ready(uint32_t queue_index) const {
    return queue_index < queues_.size() && queues_[queue_index].ready;
}

bool VhostUserDevice::queue_disabled(uint32_t queue_index) const {
    return queue_index < queues_.size() && !broken_ && features_set_ &&
           queue_started(queues_[queue_index]) && !queue_enabled(queues_[queue_index]);
}

QueueSnapshot VhostUserDevice::queue_snapshot(uint32_t queue_index) const {
    QueueSnapshot s;
    if (!queue_ready(queue_index)) {
        return s;
    }
    const Queue& q = queues_[queue_index];
    s.index = queue_index;
    s.features = acked_features_;
    s.kick_fd = q.kick.get();
    s.call_fd = q.call.get();
    s.memory = memory_;
    build_ring(q, s);
    if (logging()) {
        s.dirty_log = dirty_log_;
        s.log_areas = log_areas(q);
    }
    if (std::visit([](const auto& start) { return start.inflight.active(); }, q.start)) {
        s.inflight_mapping = {inflight_->mapping, inflight_->base, inflight_->size};
    }
    return s;
}

void VhostUserDevice::build_ring(const Queue& q, QueueSnapshot& s) const {
    // The ring translates through the map the snapshot keeps alive.
    const virtio::RingConfig config{
        s.memory.get(), s.features.has(virtio::Feature::ring_indirect_desc),
        s.features.has(virtio::Feature::ring_event_idx), s.features.has(virtio::Feature::in_order)};
    std::visit(
        [&]<typename R>(const virtio::RingStart<R>& start) {
            s.inflight_resumed = start.inflight.active() ? start.inflight.resumed() : 0;
            s.ring = R::start(start.layout, config, q.base, start.inflight);
        },
        q.start);
    s.vring_base = q.base;
}

VhostUserDevice::VringInfo VhostUserDevice::vring_info(uint32_t queue_index) const {
    VringInfo info;
    if (queue_index >= queues_.size()) {
        return info;
    }
    const Queue& q = queues_[queue_index];
    info.num = q.has_num ? q.num : 0;
    info.started = queue_started(q);
    info.enabled = queue_enabled(q);
    info.ready = q.ready;
    info.has_kick_fd = q.kick.valid();
    info.has_call_fd = q.call.valid();
    info.addr = q.has_addr ? q.addr : VringAddr{};
    return info;
}

bool VhostUserDevice::queue_started(const Queue& q) const {
    return q.has_num && q.has_base && q.has_addr && q.has_kick;
}

bool VhostUserDevice::queue_enabled(const Queue& q) const {
    // vhost-user.rst "Ring states": without PROTOCOL_FEATURES rings start enabled.
    return !acked_features_.has(virtio::Feature::vhost_user_protocol_features) || q.enabled;
}

bool VhostUserDevice::any_queue_started() const {
    return std::any_of(queues_.begin(), queues_.end(),
                       [this](const Queue& q) { return queue_started(q); });
}

bool VhostUserDevice::update_queue(uint32_t index) {
    Queue& q = queues_[index];
    if (broken_ || !queue_started(q) || memory_->region_count() == 0) {
        stop_queue(index);
        return !broken_;
    }
    if (q.ready) {
        if (!features_set_ || !queue_enabled(q)) {
            stop_queue(index);
        }
        return true;
    }
    return with_ring_model(
        [&]<typename R>(std::type_identity<R>) { return start_queue_as<R>(index); });
}

template <typename R>
bool VhostUserDevice::start_queue_as(uint32_t index) {
    Queue& q = queues_[index];
    auto broken = [&](const std::string& why) {
        mark_broken("vring " + std::to_string(index) + ": " + why);
        return false;
    };
    // Translate when the ring starts, as DPDK does: SET_VRING_ADDR may come
    // before the memory table, so the areas are checked against the map now.
    typename R::Layout layout;
    if (!R::translate(ring_addresses(q.addr), q.num, *memory_, &layout)) {
        return broken(to_string(MessageError::ring_not_in_guest_memory));
    }
    // SET_VRING_BASE checked the base against the size then; both can only
    // change while stopped, but features (split -> packed) may have come later.
    if (const MessageError e =
            to_message_error(R::validate_vring_base(q.base, static_cast<uint16_t>(q.num)));
        e != MessageError::ok) {
        return broken(to_string(e));
    }
    if (!features_set_ || !queue_enabled(q)) {
        return true;  // started and valid, but the dataplane must not run it yet
    }
    // Where the ring starts (split: the guest's used index). The front end
    // may have truncated the file under us (hostile-input rule 4).
    uint32_t base = 0;
    uintptr_t fault_address = 0;
    if (!run_guarded([&] { base = R::starting_base(layout, q.base); }, &fault_address)) {
        return broken("guest memory truncated under us");
    }
    if (base != q.base) {
        log_->info("vring {}: base ({}) differs from the ring's ({}); starting there", index,
                   describe_vring_base(ring_model(), q.base),
                   describe_vring_base(ring_model(), base));
        q.base = base;
    }
    virtio::RingStart<R> start{layout, {}};
    if (inflight_ && !start_inflight<R>(index, layout, &start.inflight)) {
        return false;
    }
    q.start = std::move(start);
    q.ready = true;
    if (observer_ != nullptr) {
        observer_->on_queue_ready(*this, index);
    }
    return true;
}

template <typename R>
bool VhostUserDevice::start_inflight(uint32_t index, const typename R::Layout& layout,
                                     typename R::Inflight* out) {
    Queue& q = queues_[index];
    const bool fresh = std::exchange(q.inflight_fresh, false);
    if (index >= inflight_->num_queues) {
        return true;  // the buffer covers the first num_queues rings only
    }
    auto fail = [&](const std::string& why) {
        mark_broken("vring " + std::to_string(index) + ": " +
                    to_string(MessageError::inflight_region_invalid) + " (" + why + ")");
        return false;
    };
    if (q.num != inflight_->queue_size) {
        return fail(to_string(virtio::InflightError::size_mismatch));
    }
    uint8_t* region = inflight_->base + index * inflight_->stride();
    virtio::InflightError e = virtio::InflightError::ok;
    uintptr_t fault_address = 0;
    // Recovery may read and write the ring (packed): the front end may have truncated it.
    if (!run_guarded([&] { e = R::recover_inflight(region, layout, q.base, fresh, out); },
                     &fault_address)) {
        return fail("guest memory truncated under us");
    }
    if (e != virtio::InflightError::ok) {
        return fail(to_string(e));
    }
    if (out->region_base.has_value() && *out->region_base != q.base) {
        log_->info("vring {}: base {:#x} differs from the inflight region's {:#x}; starting there",
                   index, q.base, *out->region_base);
    }
    log_->info("vring {}: inflight tracking on, {} resumed from the previous back end", index,
               out->resumed());
    return true;
}

bool VhostUserDevice::update_all_queues() {
    for (uint32_t i = 0; i < queues_.size(); ++i) {
        if (!update_queue(i)) {
            return false;
        }
    }
    return true;
}

void VhostUserDevice::stop_queue(uint32_t index) {
    Queue& q = queues_[index];
    if (!q.ready) {
        return;
    }
    q.ready = false;
    if (observer_ != nullptr) {
        // Barrier: the worker has let go and reports where it stopped.
        const uint32_t base = observer_->on_queue_stopped(*this, index);
        q.base = base;
    }
    q.start = {};
}

void VhostUserDevice::stop_all_queues() {
    for (uint32_t i = 0; i < queues_.size(); ++i) {
        stop_queue(i);
    }
}

void VhostUserDevice::publish_memory(std::shared_ptr<const virtio::GuestMemoryMap> map) {
    // Ready rings point into the old map: stop them, swap, re-translate.
    stop_all_queues();
    memory_ = std::move(map);
    update_all_queues();
}

}  // namespace vnet::vhost_user
