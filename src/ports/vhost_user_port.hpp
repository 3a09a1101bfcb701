// VhostUserPort: a VM's virtio-net device as a port. Queue pair q is the
// port's queue q: its TX ring (2q+1, guest -> us) is a push-style source,
// its RX ring (2q, us -> guest) a fill-style destination whose buffers a tap
// read lands in directly.
//
// Threads: the VhostUserDevice (control thread) tells the port about rings
// through the QueueObserver callbacks; the port hands each ring to the
// worker that owns its queue pair with Worker::run_sync, so the barrier the
// observer contract asks for holds: when a callback returns, the worker has
// already picked the ring up or let go of it. Everything else runs on the
// owning worker only, without locks.
//
// Hostile guests: a ring rule broken on the datapath (bad chain, avail
// index jump, readable RX buffer) stops that ring at once on the worker,
// counts a drop, and reports the reason through `on_ring_error` so the
// control thread can break the device (one log line, connection dropped).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/log.hpp"
#include "ports/port.hpp"
#include "vhost_user/queue_observer.hpp"
#include "virtio/ring/packed_ring.hpp"
#include "virtio/ring/split_device_ring.hpp"

namespace vnet::ports {

// The lender comes first: its calls are per packet (a tap filling the RX
// ring), and a call through a base other than the first goes through a
// this-adjusting thunk; the other roles are called per burst.
class VhostUserPort final : public BufferLender,
                            public Port,
                            public BurstSource,
                            public BurstSink,
                            public vhost_user::QueueObserver {
public:
    // Called on a worker thread when a guest breaks a ring rule; must only
    // post the work to the control thread.
    using RingErrorHandler = std::function<void(uint32_t ring_index, std::string reason)>;
    // Called on the control thread when the first ring of a connection starts:
    // the negotiated features (to set a tap's offloads and header size).
    using FeaturesHandler = std::function<void(virtio::FeatureSet negotiated)>;
    // Called on the control thread when queue pair `queue` is about to run
    // (both rings ready: before the worker picks them up) or has stopped
    // (after the worker let go): a multiqueue tap attaches or detaches the
    // tap queue of that number, so the kernel steers frames only to queue
    // pairs the guest enabled (ethtool -L).
    using QueuePairHandler = std::function<void(uint16_t queue, bool running)>;

    // Runs `work` on the thread that owns queue pair `queue` and returns once
    // it ran (dataplane::Worker::run_sync): how the observer callbacks reach
    // the datapath without locks.
    using RunOnOwner = std::function<void(uint16_t queue, const std::function<void()>& work)>;

    VhostUserPort(std::string name, uint16_t queue_pairs, RunOnOwner run_on_owner);
    ~VhostUserPort() override;

    void set_ring_error_handler(RingErrorHandler handler) { on_ring_error_ = std::move(handler); }
    void set_features_handler(FeaturesHandler handler) { on_features_ = std::move(handler); }
    void set_queue_pair_handler(QueuePairHandler handler) { on_queue_pair_ = std::move(handler); }

    uint16_t queue_count() const override { return queue_pairs_; }
    // The TX ring is a burst source, the RX ring a burst sink (a copy into
    // the guest's buffers) and a buffer lender (a reader fills them).
    QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this, .buffer_lender = this};
    }
    // The guest negotiates offloads and enables queue pairs: the handlers
    // above tell whoever follows it.
    bool has_front_end() const override { return true; }
    bool queue_ready(uint16_t queue) const override;

    uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) override;
    void complete_burst(uint16_t queue, const packet::PacketBurst& burst, uint16_t done) override;
    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;

    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;

    void set_rx_coalescing(uint16_t queue, uint32_t frames, uint32_t usecs) override;
    uint64_t rx_held_deadline(uint16_t queue) const override;
    void publish_held_rx(uint16_t queue) override;

    WaitSpec receive_wait(uint16_t queue) const override;
    WaitSpec transmit_wait(uint16_t queue) const override;
    bool arm_receive_wait(uint16_t queue) override;
    bool arm_transmit_wait(uint16_t queue) override;

    uint32_t queue_generation(uint16_t queue) const override;
    void on_guest_fault(uint16_t queue, uintptr_t address) override;
    QueueCounters& rx_counters(uint16_t queue) override;
    QueueCounters& tx_counters(uint16_t queue) override;

    // QueueObserver (control thread).
    void on_queue_ready(vhost_user::VhostUserDevice& device, uint32_t queue_index) override;
    uint32_t on_queue_stopped(vhost_user::VhostUserDevice& device, uint32_t queue_index) override;
    void on_call_fd_changed(vhost_user::VhostUserDevice& device, uint32_t queue_index,
                            int call_fd) override;

private:
    // The RX window: chains popped from the guest's RX ring whose buffers the
    // current burst is filling, in ring order. Each remembers the ring
    // position before its pop; unused ones are given back (rewind) at flush,
    // which is why they must be the last ones popped. A filled chain's used
    // entry is staged at flush, not per packet: the per-packet calls
    // (next_rx_buffer, commit_rx_buffer) touch only the window, and the ring
    // (a std::variant) is visited once per window refill and once per flush.
    static constexpr uint16_t kRxWindowHeads = 256;
    // Chains popped per window refill: one visit of the ring for up to this
    // many packets (non-mergeable) or buffers (mergeable).
    static constexpr uint16_t kRxRefillChains = 32;
    struct RxHead {
        uint16_t id;
        uint16_t slots;
        virtio::RingPosition before;  // position() before this chain's pop
        uint16_t first_iov;
        uint16_t iov_count;
        uint32_t bytes;
        uint32_t filled;  // set by commit_rx_buffer: the used length
    };
    // A TX chain a destination holds: what its used entry needs.
    struct InFlight {
        uint16_t id;
        uint16_t slots;
    };
    // The ring formats the port drives; which one is fixed while a ring runs
    // (VIRTIO_F_RING_PACKED is negotiated once per connection).
    using AnyRing = std::variant<virtio::SplitDeviceRing, virtio::PackedRing>;

    // rx_frames / rx_usecs for one RX ring (DESIGN.md); frames = 0: off.
    struct RxCoalescing {
        uint32_t frames = 0;
        uint32_t usecs = 0;
    };
    // The deadline of frames held with rx_usecs = 0: due at the end of the
    // worker round that delivered them (any clock value is past it).
    static constexpr uint64_t kHeldUntilRoundEnd = 1;

    struct Ring {
        bool ready = false;
        bool kicks_enabled = true;  // the guest's view: do we want kicks
        AnyRing ring;
        std::shared_ptr<const virtio::GuestMemoryMap> memory;
        virtio::FeatureSet features;
        uint32_t header_size = 12;
        bool write_num_buffers = true;  // MRG_RXBUF or VERSION_1
        bool mergeable = false;         // MRG_RXBUF
        int kick_fd = -1;
        int call_fd = -1;
        // A guest access faulted (the front end shrank its memory): nothing
        // may touch this ring's memory again, not even to finish up.
        bool memory_lost = false;
        uint16_t pending_used = 0;  // added since the last publish
        uint32_t generation = 0;    // bumped each time the ring (re)starts
        // TX only: heads handed out by receive_burst and not yet completed,
        // oldest first (completions come in the same order). Completed as
        // dropped if the ring stops while a destination still holds them.
        std::array<InFlight, packet::kMaxBurstPackets> in_flight{};
        uint16_t in_flight_first = 0;
        uint16_t in_flight_count = 0;
        // RX only: the window (see above).
        std::array<RxHead, kRxWindowHeads> window{};
        uint16_t window_count = 0;   // heads in the window
        uint16_t window_pos = 0;     // first head not yet holding a packet
        uint16_t window_taken = 0;   // heads the current packet's buffer spans
        uint16_t window_staged = 0;  // filled heads whose used entry is staged
        uint32_t requested_max = 0;  // max_packet of the current next_rx_buffer
        uint16_t parked_avail = 0;   // avail heads left when the path parked
        std::array<iovec, packet::kMaxBurstIovecs> window_iovecs{};
        uint16_t window_iovecs_used = 0;
        // RX: frames (and their bytes) committed since the last publish. With
        // coalescing they span several flushes; counted when published.
        uint16_t burst_packets = 0;
        uint64_t burst_bytes = 0;
        uint16_t held_packets = 0;  // RX: burst_packets when the last flush held them
        // RX: next_rx_buffer found too few posted buffers during this burst.
        bool rx_starved = false;
        // RX: when the held frames must be published (steady_clock ns); 0:
        // nothing held, kHeldUntilRoundEnd: rx_usecs = 0.
        uint64_t held_deadline = 0;
        RxCoalescing coalescing;            // outlives restarts: it is configuration
        QueueCounters* counters = nullptr;  // outlives restarts: counts are per port
    };

    Ring& tx_ring(uint16_t queue) { return rings_[2u * queue + 1]; }
    Ring& rx_ring(uint16_t queue) { return rings_[2u * queue]; }
    const Ring& tx_ring(uint16_t queue) const { return rings_[2u * queue + 1]; }
    const Ring& rx_ring(uint16_t queue) const { return rings_[2u * queue]; }
    void on_owner(uint32_t ring_index, const std::function<void()>& work) const {
        run_on_owner_(static_cast<uint16_t>(ring_index / 2), work);
    }

    void fail_ring(uint32_t ring_index, const char* what, const char* detail);
    // The per-ring logic, one instantiation per ring format (R is a
    // virtio::DeviceRing); the public entry points visit Ring::ring once.
    template <typename R>
    uint16_t receive_burst_on(uint32_t ring_index, Ring& r, R& ring, packet::PacketBurst& burst,
                              uint16_t max);
    template <typename R>
    void publish_and_notify(Ring& r, R& ring);
    // End of an RX burst: publish now, or hold for rx_frames / rx_usecs.
    bool should_hold_rx_publish(Ring& r, uint16_t avail_left);
    template <typename R>
    void publish_rx(Ring& r, R& ring);
    template <typename R>
    bool refill_rx_window(uint32_t ring_index, Ring& r, R& ring);
    bool grow_rx_window(uint32_t ring_index, Ring& r, uint32_t need_bytes);
    template <typename R>
    void stage_rx_used(Ring& r, R& ring);
    template <typename R>
    void reset_rx_window(Ring& r, R& ring);
    template <typename R>
    void complete_in_flight_as_dropped(Ring& r, R& ring, DropReason reason);
    // on_queue_stopped's work on guest memory; returns untaken TX heads.
    // Packets a destination still holds are dropped as `held_drop`.
    template <typename R>
    uint16_t finish_ring(Ring& r, R& ring, bool is_tx, DropReason held_drop);

    uint16_t queue_pairs_;
    RunOnOwner run_on_owner_;
    Logger log_;                                 // control thread only
    std::vector<Ring> rings_;                    // 2 per queue pair
    std::unique_ptr<QueueCounters[]> counters_;  // one per ring
    uint32_t generation_counter_ = 0;            // control thread (inside run_sync)
    // Control thread: rings the device has handed to the dataplane (between
    // on_queue_ready and on_queue_stopped), to tell when a pair starts/stops.
    std::vector<bool> ring_running_;
    RingErrorHandler on_ring_error_;
    FeaturesHandler on_features_;
    QueuePairHandler on_queue_pair_;
};

}  // namespace vnet::ports
