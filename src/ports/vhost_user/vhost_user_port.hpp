// VhostUserPort: a VM's virtio-net device as a port, a thin adapter from
// the Port interface to the virtio-net queues (src/virtio/net/). Queue pair
// q is the port's queue q: its TX ring (2q+1, guest -> us) is a NetTxQueue,
// a push-style source; its RX ring (2q, us -> guest) a NetRxQueue, a
// fill-style destination whose buffers a tap read lands in directly. The
// queues decide; the adapter does what virtio may not: eventfd writes,
// logging, breaking the device.
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
#include <optional>
#include <string>
#include <vector>

#include "common/log.hpp"
#include "packet/wire.hpp"
#include "ports/port.hpp"
#include "vhost_user/queue_observer.hpp"
#include "virtio/net/net_rx_queue.hpp"
#include "virtio/net/net_tx_queue.hpp"
#include "virtio/net/offload_adaptation.hpp"
#include "virtio/ring/ring_state.hpp"

namespace vnet::ports {

// The lender comes first: its calls are per packet (a tap filling the RX
// ring), and a call through a base other than the first goes through a
// this-adjusting thunk; the other roles are called per burst.
class VhostUserPort final : public BufferLender,
                            public Port,
                            public BurstSource,
                            public BurstSink,
                            public RxPacing,
                            public vhost_user::QueueObserver {
public:
    // Called on a worker thread when a guest breaks a ring rule; must only
    // post the work to the control thread.
    using RingErrorHandler = std::function<void(uint32_t ring_index, std::string reason)>;
    // Called on the control thread when the first ring of a connection starts:
    // the negotiated features (to set a tap's offloads and header size).
    using FeaturesHandler = std::function<void(virtio::FeatureSet negotiated)>;
    // Called on the control thread when queue pair `queue` is about to run
    // (its first ring ready: before the worker picks it up; each ring is
    // served on its own kick) or has stopped (both rings, after the worker
    // let go): a multiqueue tap attaches or detaches the tap queue of that
    // number, so the kernel steers frames only to queue pairs the guest
    // enabled (ethtool -L), and a TX ring never writes a detached queue.
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
    // Whole GSO frames from other guests written with streaming stores (the
    // `streaming_stores` option); set before the first ring starts, while
    // the queue pairs are still the control thread's.
    void set_streaming_stores(bool on);

    uint16_t queue_count() const override { return queue_pairs_; }
    // The TX ring is a burst source, the RX ring a burst sink (a copy into
    // the guest's buffers) and a buffer lender (a reader fills them), paced
    // (the used index publish and the guest's call).
    QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this, .buffer_lender = this, .rx_pacing = this};
    }
    // The guest negotiates offloads and enables queue pairs: the handlers
    // above tell whoever follows it.
    bool has_front_end() const override { return true; }
    bool queue_ready(uint16_t queue) const override;
    // The guest's TX ring feeds paths from the port, its RX ring paths into
    // it; each is served once it runs, whatever the other does.
    bool source_ready(uint16_t queue) const override;
    bool destination_ready(uint16_t queue) const override;

    uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) override;
    void complete_burst(uint16_t queue, const packet::PacketBurst& burst, uint16_t done) override;
    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;

    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;
    uint16_t lend_rx_buffers(uint16_t queue, uint32_t max_packet, uint16_t max,
                             packet::PacketBurst& out) override;
    void commit_rx_buffers(uint16_t queue, std::span<const int> lengths) override;

    void set_rx_coalescing(uint16_t queue, uint32_t frames, uint32_t usecs, bool adaptive) override;
    uint64_t rx_held_deadline(uint16_t queue) const override;
    void publish_held_rx(uint16_t queue) override;
    void publish_rx_before_sleep(uint16_t queue) override;
    void set_adaptive_rx(uint16_t queue, bool on) override;
    uint64_t rx_call_deadline(uint16_t queue) const override;
    void flush_rx_call(uint16_t queue) override;

    WaitSpec receive_wait(uint16_t queue) const override;
    WaitSpec transmit_wait(uint16_t queue) const override;
    bool arm_receive_wait(uint16_t queue) override;
    bool arm_transmit_wait(uint16_t queue) override;

    uint32_t queue_generation(uint16_t queue) const override;
    void on_guest_fault(uint16_t queue, uintptr_t address) override;
    packet::QueueCounters& rx_counters(uint16_t queue) override;
    packet::QueueCounters& tx_counters(uint16_t queue) override;

    // ---- vnetctl show (control thread) ----------------------------------------
    // One ring (2q: the guest's RX, 2q+1: its TX) as its owning worker has it.
    struct RingView {
        bool running = false;      // the worker has the ring
        bool memory_lost = false;  // a guest access faulted: nothing may read it
        bool kick_fd = false;      // the worker sleeps on a kick eventfd (false: NOFD)
        bool call_fd = false;      // the guest gave a call eventfd
        // Its counters (QueueCounters of the ring), read with the cursors.
        uint64_t kicks = 0;
        uint64_t calls = 0;
        uint64_t packets = 0;
        uint64_t drops = 0;
        uint64_t inflight_resumed = 0;
        std::optional<virtio::RingState> state;  // while running with readable memory
    };
    // Runs on the ring's owner (run_sync): see the .cpp.
    RingView ring_view(uint32_t ring_index);

    // QueueObserver (control thread).
    void on_queue_ready(vhost_user::VhostUserDevice& device, uint32_t queue_index) override;
    uint32_t on_queue_stopped(vhost_user::VhostUserDevice& device, uint32_t queue_index) override;
    void on_call_fd_changed(vhost_user::VhostUserDevice& device, uint32_t queue_index,
                            int call_fd) override;
    // SEND_RARP: the next burst taken from the guest's first TX ring carries
    // one RARP broadcast from `mac` (after its own packets), so the switch
    // or tap this port feeds learns where the migrated guest now is.
    void on_rarp_requested(vhost_user::VhostUserDevice& device,
                           const vhost_user::MacAddress& mac) override;
    // RARP announcements sent (control thread; read on the owner).
    uint64_t announcements_sent();

private:
    // What the adapter keeps of one ring besides its queue: what the device
    // handed over with it.
    struct RingEnd {
        std::shared_ptr<const virtio::GuestMemoryMap> memory;
        // Set while the front end migrates the guest (VHOST_F_LOG_ALL).
        std::shared_ptr<const virtio::DirtyLog> dirty_log;
        vhost_user::MappedArea inflight_mapping;  // INFLIGHT_SHMFD: the buffer the ring marks
        int kick_fd = -1;
        int call_fd = -1;
        // An access to one of the ring's mappings faulted (the front end
        // shrank its memory, log or inflight buffer): nothing may touch the
        // ring's memory again, not even to finish up, since a write there
        // could no longer be marked or tracked.
        bool memory_lost = false;
        uint32_t generation = 0;  // bumped each time the ring (re)starts
    };
    // Queue pair q: RX ring 2q (us -> guest) and TX ring 2q+1 (guest -> us).
    struct QueuePair {
        QueuePair(packet::QueueCounters& rx_ring_counters, packet::QueueCounters& tx_ring_counters);
        virtio::NetRxQueue rx;
        virtio::NetTxQueue tx;
        RingEnd rx_end;
        RingEnd tx_end;
        // Other guests' packets made fit for what this guest's RX ring
        // negotiated (transmit_burst).
        virtio::OffloadAdaptation adaptation;
    };
    // The RARP frame SEND_RARP asked for, behind a zeroed virtio-net header
    // (the largest one; a 10-byte guest uses its tail). Owner thread only.
    struct Announcement {
        static constexpr size_t kHeaderRoom = 12;
        std::array<uint8_t, kHeaderRoom + packet::kEthMinFrameLen> bytes{};
        bool pending = false;
        uint64_t sent = 0;
    };
    // Appends the announcement to a TX burst if one is pending and fits.
    uint16_t add_announcement(packet::PacketBurst& burst, uint16_t room);

    QueuePair& pair_of(uint32_t ring_index) { return pairs_[ring_index / 2]; }
    static bool is_tx(uint32_t ring_index) { return (ring_index % 2) == 1; }
    RingEnd& end_of(uint32_t ring_index) {
        QueuePair& p = pair_of(ring_index);
        return is_tx(ring_index) ? p.tx_end : p.rx_end;
    }
    void on_owner(uint32_t ring_index, const std::function<void()>& work) const {
        run_on_owner_(static_cast<uint16_t>(ring_index / 2), work);
    }

    // A queue stopped itself on a broken ring rule: tell the control thread.
    void report_fault(uint32_t ring_index, const virtio::RingFault& fault);
    // Which of the mappings ring end `e` holds contains `address`, named as
    // the fault the device breaks with; null if none does.
    static const virtio::RingFault* mapping_fault_at(const RingEnd& e, uintptr_t address);
    // on_queue_ready's work on the owner: the queue starts over on the ring.
    void start_ring(uint32_t ring_index, const vhost_user::QueueSnapshot& s);

    uint16_t queue_pairs_;
    RunOnOwner run_on_owner_;
    Logger log_;                                         // control thread only
    std::unique_ptr<packet::QueueCounters[]> counters_;  // one per ring
    Announcement announcement_;                          // queue pair 0's owner
    std::vector<QueuePair> pairs_;
    uint32_t generation_counter_ = 0;  // control thread (inside run_sync)
    // Control thread: rings the device has handed to the dataplane (between
    // on_queue_ready and on_queue_stopped), to tell when a pair starts/stops.
    std::vector<bool> ring_running_;
    RingErrorHandler on_ring_error_;
    FeaturesHandler on_features_;
    QueuePairHandler on_queue_pair_;
};

}  // namespace vnet::ports
