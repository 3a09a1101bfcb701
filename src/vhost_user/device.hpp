// VhostUserDevice: the state machine of one virtio-net device as one front end
// (one vhost-user connection) drives it. Socket-free: the connection hands it
// decoded messages through handle_message() and sends the reply it returns,
// so tests and the fuzzer drive it directly.
//
// Rules it keeps (reference/hostile-input-rules.md):
// - A message is validated completely before any state changes; a refused
//   message leaves the device exactly as it was.
// - Reply policy lives in handle_message only: requests with their own reply
//   get it; otherwise, with REPLY_ACK negotiated and NEED_REPLY set, a u64
//   (0 = done, 1 = refused). A refusal the front end cannot be told about
//   (no NEED_REPLY, or a request whose own reply cannot be produced) breaks
//   the device, as DPDK closes the connection: the front end must never carry
//   on believing a refused message was applied.
// - Broken: the reason is logged once with the socket name, every ring is
//   stopped (observer), every later message is refused, and the connection is
//   dropped (DispatchResult::disconnect). Nothing throws, nothing else is hurt.
//
// Threading: control thread only. The dataplane learns about queues through
// the QueueObserver contract (queue_observer.hpp) and works on snapshots.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "vhost_user/connection.hpp"
#include "vhost_user/message.hpp"
#include "vhost_user/message_error.hpp"
#include "vhost_user/queue_observer.hpp"
#include "virtio/features.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/log/queue_log.hpp"
#include "virtio/ring/pop_status.hpp"

namespace vnet::vhost_user {

struct RequestTableBuilder;
struct RequestSpec;

// What a tap path with a 12-byte vnet header passes through, and nothing we
// do not implement (no IOMMU yet). RING_PACKED: rings of either format
// (virtio/ring/). GUEST_ANNOUNCE: the front end does the work (QEMU raises
// the config interrupt after a migration, the guest announces itself and
// acks on the control queue, which QEMU keeps), and QEMU then sends no
// SEND_RARP; offering it lets a guest that can announce do so, with its IPv4
// and IPv6 addresses, rather than get vnetd's RARP. IN_ORDER: every queue
// completes its chains oldest first anyway (NetTxQueue, RxWindow), so a
// driver that negotiates it (DPDK virtio-user's default) runs its in-order
// paths, and a packed TX burst goes back as one used descriptor (RingConfig).
// VHOST_F_LOG_ALL is the back end's, not the guest's: it is always offered
// (compute_offered_features), like bit 30.
inline constexpr virtio::FeatureSet kDefaultDeviceFeatures{
    virtio::Feature::net_csum,           virtio::Feature::net_guest_csum,
    virtio::Feature::net_guest_tso4,     virtio::Feature::net_guest_tso6,
    virtio::Feature::net_guest_ecn,      virtio::Feature::net_guest_ufo,
    virtio::Feature::net_host_tso4,      virtio::Feature::net_host_tso6,
    virtio::Feature::net_host_ecn,       virtio::Feature::net_host_ufo,
    virtio::Feature::net_mrg_rxbuf,      virtio::Feature::ring_event_idx,
    virtio::Feature::ring_indirect_desc, virtio::Feature::notify_on_empty,
    virtio::Feature::version_1,          virtio::Feature::ring_packed,
    virtio::Feature::net_guest_announce, virtio::Feature::in_order,
};
// The most a configuration may offer: the defaults plus MQ and MTU (added by
// the device when max_queue_pairs > 1 / an MTU is configured).
inline constexpr virtio::FeatureSet kSupportedDeviceFeatures =
    kDefaultDeviceFeatures | virtio::FeatureSet{virtio::Feature::net_mq, virtio::Feature::net_mtu};

inline constexpr ProtocolFeatureSet kDefaultProtocolFeatures{
    ProtocolFeature::mq,
    ProtocolFeature::reply_ack,
    ProtocolFeature::configure_mem_slots,
    ProtocolFeature::status,
    ProtocolFeature::net_mtu,
    ProtocolFeature::rarp,
    ProtocolFeature::log_shmfd,
    ProtocolFeature::inflight_shmfd,
};
// CONFIG is offered with an MTU (GET_CONFIG is how a front end reads it).
inline constexpr ProtocolFeatureSet kSupportedProtocolFeatures =
    kDefaultProtocolFeatures | ProtocolFeatureSet{ProtocolFeature::config};

// DPDK's VHOST_MAX_QUEUE_PAIRS; also keeps every vring index below 256 (the
// KICK/CALL/ERR payload has 8 index bits).
inline constexpr uint32_t kMaxQueuePairs = 128;

struct DeviceConfig {
    std::string name = "vhost-user";  // socket path or port name: every log line carries it
    uint32_t max_queue_pairs = 1;     // 1..kMaxQueuePairs (clamped)
    virtio::FeatureSet features = kDefaultDeviceFeatures;  // narrowed to kSupportedDeviceFeatures
    ProtocolFeatureSet protocol_features = kDefaultProtocolFeatures;
    // Offers VIRTIO_NET_F_MTU and, to read it, GET_CONFIG (PROTOCOL_F_CONFIG) when set.
    std::optional<uint16_t> mtu;
};

struct DispatchResult {
    MessageError error = MessageError::ok;  // ok if the request was carried out
    bool has_reply = false;                 // `reply` holds a message to send
    bool disconnect = false;                // the device is broken: drop the connection
};

// SET_VRING_BASE's refusal for a base the ring model rejects.
MessageError to_message_error(virtio::BaseError e);

class VhostUserDevice {
public:
    // `observer` may be null (then stopping a queue keeps its base).
    VhostUserDevice(DeviceConfig config, QueueObserver* observer);
    // Stops every ready queue (observer) before the memory goes away.
    ~VhostUserDevice();
    VhostUserDevice(const VhostUserDevice&) = delete;
    VhostUserDevice& operator=(const VhostUserDevice&) = delete;

    // Validates and applies one request. Fds still attached to `request`
    // afterwards are closed. When has_reply, `reply` is complete: header
    // flags 0x5, exact size.
    DispatchResult handle_message(Message& request, Message& reply);

    // Marks the device broken (first reason wins; logged once) and stops every
    // ready queue. For the dataplane too (posted to the control thread) when a
    // guest breaks a ring rule.
    void mark_broken(const std::string& reason);
    bool is_broken() const { return broken_; }
    const std::string& broken_reason() const { return broken_reason_; }

    const std::string& name() const { return config_.name; }
    uint32_t queue_count() const { return static_cast<uint32_t>(queues_.size()); }
    uint32_t max_queue_pairs() const { return queue_count() / 2; }

    bool queue_ready(uint32_t queue_index) const;
    // The front end turned the ring off (SET_VRING_ENABLE 0) while it is set
    // up: what the dataplane still holds of it is dropped as queue_disabled,
    // not as a lost peer.
    bool queue_disabled(uint32_t queue_index) const;
    // Valid (a ring over guest memory) only while queue_ready(queue_index).
    QueueSnapshot queue_snapshot(uint32_t queue_index) const;
    // What the front end set up for a ring, as the device keeps it (vnetctl
    // show): any index below queue_count(), ready or not.
    struct VringInfo {
        uint32_t num = 0;      // SET_VRING_NUM (0: not yet)
        bool started = false;  // NUM, BASE, ADDR and KICK since the last stop
        bool enabled = false;  // SET_VRING_ENABLE, or implied without PROTOCOL_FEATURES
        bool ready = false;    // handed to the dataplane
        bool has_kick_fd = false;
        bool has_call_fd = false;
        VringAddr addr{};  // front-end virtual addresses (SET_VRING_ADDR)
    };
    VringInfo vring_info(uint32_t queue_index) const;

    virtio::FeatureSet offered_features() const { return offered_features_; }
    ProtocolFeatureSet offered_protocol_features() const { return offered_protocol_; }
    virtio::FeatureSet negotiated_features() const { return acked_features_; }
    ProtocolFeatureSet negotiated_protocol_features() const { return acked_protocol_; }
    std::shared_ptr<const virtio::GuestMemoryMap> memory() const { return memory_; }
    uint8_t status() const { return status_; }
    std::optional<uint16_t> mtu() const { return mtu_; }  // from NET_SET_MTU
    std::optional<MacAddress> rarp_mac() const { return rarp_mac_; }
    // Live migration: the front end gave a log (SET_LOG_BASE) and turned
    // VHOST_F_LOG_ALL on; every ready ring marks what it writes.
    bool logging() const {
        return dirty_log_ != nullptr && acked_features_.has(virtio::Feature::vhost_log_all);
    }
    const virtio::DirtyLog* dirty_log() const { return dirty_log_.get(); }
    // INFLIGHT_SHMFD: a buffer was given (GET or SET_INFLIGHT_FD); its
    // queue count (0: none).
    uint16_t inflight_queues() const { return inflight_ ? inflight_->num_queues : 0; }
    MessageError last_error() const { return last_error_; }
    // The ring format the negotiated features select (a stopped ring's
    // snapshot no longer says it).
    virtio::RingModel ring_model() const { return virtio::ring_model(acked_features_); }

private:
    friend struct RequestTableBuilder;

    struct Queue {
        uint32_t num = 0;
        // The vring base in the format's encoding (split: the next avail
        // index), checked against the format's rules at SET_VRING_BASE.
        uint32_t base = 0;
        VringAddr addr{};
        bool has_num = false;
        bool has_base = false;
        bool has_addr = false;
        bool has_kick = false;  // a kick fd or NOFD arrived since the last stop
        bool enabled = false;   // SET_VRING_ENABLE
        bool ready = false;     // the dataplane owns it (see queue_observer.hpp)
        UniqueFd kick;
        UniqueFd call;
        UniqueFd err;
        // While ready: the started ring's areas and inflight state, in the
        // negotiated format (build_ring makes each snapshot's ring from it).
        virtio::AnyRingStart start;
        // The buffer was made by our GET_INFLIGHT_FD and this ring has not
        // started over it: its positions are a new ring's, the base's stand.
        bool inflight_fresh = false;
    };

    // The inflight buffer (GET_INFLIGHT_FD or SET_INFLIGHT_FD): num_queues
    // regions of R::inflight_queue_bytes(queue_size), from
    // `base`, in the layout of the ring format negotiated when it came.
    struct InflightArea {
        std::shared_ptr<const void> mapping;
        uint8_t* base = nullptr;
        uint64_t size = 0;
        uint16_t num_queues = 0;
        uint16_t queue_size = 0;
        virtio::RingModel model;  // the format negotiated when it came
        uint64_t stride() const {
            return std::visit(
                [this]<typename R>(std::type_identity<R>) {
                    return R::inflight_queue_bytes(queue_size);
                },
                model);
        }
    };
    // Shared by GET and SET: the sizes, the ring format, and no ring running.
    MessageError check_inflight_request(const InflightDescription& d) const;
    // Starts ring `index` in the negotiated format: translates its areas,
    // checks its base, and once it may run, finds where it starts and
    // recovers its inflight region. False: the device is broken.
    template <typename R>
    bool start_queue_as(uint32_t index);
    template <typename R>
    bool start_inflight(uint32_t index, const typename R::Layout& layout,
                        typename R::Inflight* out);

    // f(std::type_identity<R>{}) for the model of the negotiated format:
    // what a format decides about its areas, asked of the format itself.
    template <typename F>
    decltype(auto) with_ring_model(F&& f) const {
        return std::visit(std::forward<F>(f), ring_model());
    }

    // Handlers: syntax is checked by the dispatcher (request_table.hpp).
    MessageError handle_get_features(Message& m, Message& reply);
    MessageError handle_set_features(Message& m, Message& reply);
    MessageError handle_set_owner(Message& m, Message& reply);
    MessageError handle_reset_owner(Message& m, Message& reply);
    MessageError handle_set_mem_table(Message& m, Message& reply);
    MessageError handle_set_log_base(Message& m, Message& reply);
    MessageError handle_set_log_fd(Message& m, Message& reply);
    MessageError handle_set_vring_num(Message& m, Message& reply);
    MessageError handle_set_vring_addr(Message& m, Message& reply);
    MessageError handle_set_vring_base(Message& m, Message& reply);
    MessageError handle_get_vring_base(Message& m, Message& reply);
    MessageError handle_set_vring_kick(Message& m, Message& reply);
    MessageError handle_set_vring_call(Message& m, Message& reply);
    MessageError handle_set_vring_err(Message& m, Message& reply);
    MessageError handle_get_protocol_features(Message& m, Message& reply);
    MessageError handle_set_protocol_features(Message& m, Message& reply);
    MessageError handle_get_queue_num(Message& m, Message& reply);
    MessageError handle_set_vring_enable(Message& m, Message& reply);
    MessageError handle_send_rarp(Message& m, Message& reply);
    MessageError handle_net_set_mtu(Message& m, Message& reply);
    MessageError handle_set_backend_req_fd(Message& m, Message& reply);
    MessageError handle_get_max_mem_slots(Message& m, Message& reply);
    MessageError handle_add_mem_reg(Message& m, Message& reply);
    MessageError handle_rem_mem_reg(Message& m, Message& reply);
    MessageError handle_set_status(Message& m, Message& reply);
    MessageError handle_get_status(Message& m, Message& reply);
    MessageError handle_get_config(Message& m, Message& reply);
    MessageError handle_get_inflight_fd(Message& m, Message& reply);
    MessageError handle_set_inflight_fd(Message& m, Message& reply);

    // The two halves of handle_message: table checks then the handler, and
    // the reply policy (ack, own reply, or break).
    MessageError run_request(const RequestSpec* spec, Message& request, Message& reply);
    DispatchResult apply_reply_policy(const RequestSpec* spec, const Message& request,
                                      MessageError error, Message& reply);

    // Shared by KICK/CALL/ERR: index, reserved bits and the eventfd check.
    MessageError take_vring_fd(Message& m, uint32_t* index, UniqueFd* fd);

    // A ring is "started" once fully set up; NUM/BASE are refused then.
    bool queue_started(const Queue& q) const;
    bool queue_enabled(const Queue& q) const;
    // Makes ready/not ready match the state, calling the observer. Returns
    // false (device broken) if a fully set-up ring is not in guest memory.
    bool update_queue(uint32_t index);
    // The snapshot's ring, in the negotiated format, from what start
    // translated and validated (cold: once per ring start).
    void build_ring(const Queue& q, QueueSnapshot& s) const;
    void stop_queue(uint32_t index);
    void stop_all_queues();
    bool update_all_queues();
    // Stops the ready queues, publishes `map`, restarts them on the new map.
    void publish_memory(std::shared_ptr<const virtio::GuestMemoryMap> map);
    bool any_queue_started() const;
    // Where a ring's device-written areas lie in guest-physical addresses.
    virtio::RingLogAreas log_areas(const Queue& q) const;
    // Logging went on or off (or to another log): every ready ring restarts
    // with the new state, and the change is logged once.
    bool apply_logging_change(bool was_logging, const virtio::DirtyLog* old_log);

    DeviceConfig config_;
    QueueObserver* observer_;
    Logger log_;
    virtio::FeatureSet offered_features_;
    ProtocolFeatureSet offered_protocol_;
    virtio::FeatureSet acked_features_;
    bool features_set_ = false;
    ProtocolFeatureSet acked_protocol_;
    std::shared_ptr<const virtio::GuestMemoryMap> memory_;
    std::vector<Queue> queues_;
    uint8_t status_ = 0;
    std::optional<uint16_t> mtu_;
    std::optional<MacAddress> rarp_mac_;
    std::shared_ptr<const virtio::DirtyLog> dirty_log_;  // SET_LOG_BASE
    std::shared_ptr<const InflightArea> inflight_;       // GET/SET_INFLIGHT_FD
    UniqueFd backend_req_;
    bool broken_ = false;
    std::string broken_reason_;
    MessageError last_error_ = MessageError::ok;
    uint32_t refusals_logged_ = 0;
};

}  // namespace vnet::vhost_user
