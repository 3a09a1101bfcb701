#include "ports/vhost_user/vhost_user_port.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/guest_fault.hpp"
#include "io/eventfd.hpp"
#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "packet/rarp_announcement.hpp"
#include "vhost_user/device.hpp"
#include "vhost_user/vring_base_text.hpp"

namespace vnet::ports {

namespace {

// The RX queue's coalescing clock: the worker compares deadlines against the
// same clock (steady_clock is CLOCK_MONOTONIC, which its timerfd uses too).
uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// A queue decided the guest wants a call (it only does with a call fd).
// Counted per eventfd write that went through: one per interrupt.
void notify_guest(int call_fd, packet::QueueCounters& ring_counters) {
    if (io::signal_eventfd(call_fd)) {
        ring_counters.calls.add(1);
    }
}

}  // namespace

VhostUserPort::QueuePair::QueuePair(packet::QueueCounters& rx_ring_counters,
                                    packet::QueueCounters& tx_ring_counters)
    : rx(rx_ring_counters, now_ns), tx(tx_ring_counters) {}

VhostUserPort::VhostUserPort(std::string name, uint16_t queue_pairs, RunOnOwner run_on_owner)
    : Port(std::move(name)),
      queue_pairs_(queue_pairs),
      run_on_owner_(std::move(run_on_owner)),
      log_(make_logger(this->name())),
      counters_(std::make_unique<packet::QueueCounters[]>(2u * queue_pairs)),
      ring_running_(2u * queue_pairs, false) {
    pairs_.reserve(queue_pairs);
    for (uint16_t q = 0; q < queue_pairs; ++q) {
        pairs_.emplace_back(counters_[2u * q], counters_[2u * q + 1]);
    }
}

VhostUserPort::~VhostUserPort() = default;

bool VhostUserPort::queue_ready(uint16_t queue) const {
    return queue < queue_pairs_ && pairs_[queue].tx.running() && pairs_[queue].rx.running();
}

bool VhostUserPort::source_ready(uint16_t queue) const {
    return queue < queue_pairs_ && pairs_[queue].tx.running();
}

bool VhostUserPort::destination_ready(uint16_t queue) const {
    return queue < queue_pairs_ && pairs_[queue].rx.running();
}

uint32_t VhostUserPort::queue_generation(uint16_t queue) const {
    return pairs_[queue].tx_end.generation;
}

// ---- guest TX: push-style source -------------------------------------------------

uint16_t VhostUserPort::receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) {
    QueuePair& p = pairs_[queue];
    const virtio::NetTxQueue::Received got = p.tx.receive_burst(burst, max);
    if (got.taken != 0) {
        p.rx.note_guest_sent();
    }
    if (got.notify) {
        notify_guest(p.tx_end.call_fd, rx_counters(queue));
    }
    if (const virtio::RingFault* fault = p.tx.take_fault()) {
        report_fault(2u * queue + 1, *fault);
    }
    if (queue == 0 && announcement_.pending) [[unlikely]] {
        return static_cast<uint16_t>(got.taken + add_announcement(burst, max - got.taken));
    }
    return got.taken;
}

uint16_t VhostUserPort::add_announcement(packet::PacketBurst& burst, uint16_t room) {
    QueuePair& p = pairs_[0];
    if (!p.tx.running() || room == 0 || burst.count == packet::kMaxBurstPackets ||
        burst.free_iovecs().empty()) {
        return 0;  // the next burst, then
    }
    // The burst's header size is the guest's (set by the queue just now):
    // the frame keeps that many zero bytes in front of it.
    const size_t header = std::min<size_t>(burst.header_size, Announcement::kHeaderRoom);
    const size_t skip = Announcement::kHeaderRoom - header;
    burst.free_iovecs()[0] =
        iovec{announcement_.bytes.data() + skip, announcement_.bytes.size() - skip};
    burst.push(1, static_cast<uint32_t>(announcement_.bytes.size() - skip),
               virtio::NetTxQueue::kNotFromRingToken);
    announcement_.pending = false;
    ++announcement_.sent;
    return 1;
}

void VhostUserPort::on_rarp_requested(vhost_user::VhostUserDevice&,
                                      const vhost_user::MacAddress& mac) {
    const std::array<uint8_t, packet::kEthMinFrameLen> frame = packet::rarp_announcement(mac);
    log_->info(
        "SEND_RARP: announcing {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} with a RARP "
        "broadcast",
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    on_owner(1, [&] {
        // On the owner: a burst still holding the previous announcement
        // holds the same bytes for the same MAC.
        std::copy(frame.begin(), frame.end(),
                  announcement_.bytes.begin() + Announcement::kHeaderRoom);
        announcement_.pending = true;
    });
}

uint64_t VhostUserPort::announcements_sent() {
    uint64_t sent = 0;
    on_owner(1, [&] { sent = announcement_.sent; });
    return sent;
}

void VhostUserPort::complete_burst(uint16_t queue, const packet::PacketBurst& burst,
                                   uint16_t done) {
    QueuePair& p = pairs_[queue];
    if (p.tx.complete_burst(burst, done)) {
        notify_guest(p.tx_end.call_fd, rx_counters(queue));
    }
}

// ---- guest RX: fill-style destination ------------------------------------------

bool VhostUserPort::next_rx_buffer(uint16_t queue, uint32_t max_packet,
                                   std::span<const iovec>* out) {
    QueuePair& p = pairs_[queue];
    if (p.rx.next_buffer(max_packet, out)) {
        return true;
    }
    if (const virtio::RingFault* fault = p.rx.take_fault()) {
        report_fault(2u * queue, *fault);
    }
    return false;
}

void VhostUserPort::commit_rx_buffer(uint16_t queue, uint32_t len) {
    pairs_[queue].rx.commit_buffer(len);
}

uint16_t VhostUserPort::lend_rx_buffers(uint16_t queue, uint32_t max_packet, uint16_t max,
                                        packet::PacketBurst& out) {
    // 0 leaves it to next_rx_buffer, which reports a ring that broke.
    return pairs_[queue].rx.lend_buffers(max_packet, max, out);
}

void VhostUserPort::commit_rx_buffers(uint16_t queue, std::span<const int> lengths) {
    pairs_[queue].rx.commit_buffers(lengths);
}

void VhostUserPort::flush_rx_buffers(uint16_t queue) {
    QueuePair& p = pairs_[queue];
    if (p.rx.flush()) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

void VhostUserPort::set_rx_coalescing(uint16_t queue, uint32_t frames, uint32_t usecs,
                                      bool adaptive) {
    if (queue >= queue_pairs_) {
        return;
    }
    QueuePair& p = pairs_[queue];
    if (p.rx.set_coalescing(frames, usecs, adaptive)) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

uint64_t VhostUserPort::rx_held_deadline(uint16_t queue) const {
    return pairs_[queue].rx.held_deadline();  // a stopped ring publishes in finish
}

void VhostUserPort::publish_held_rx(uint16_t queue) {
    QueuePair& p = pairs_[queue];
    if (p.rx.publish_held()) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

void VhostUserPort::publish_rx_before_sleep(uint16_t queue) {
    QueuePair& p = pairs_[queue];
    if (p.rx.publish_stream_held()) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

uint16_t VhostUserPort::transmit_burst(uint16_t queue, const packet::PacketBurst& burst) {
    // Another port's packets into this guest: one copy, straight into its
    // RX buffers, each made fit for the offloads this guest negotiated
    // (virtio/net/offload_adaptation.hpp: header size, checksums, GSO).
    // The queue runs the loop; fewer than burst.count taken: the caller
    // retries from there once the guest posts buffers.
    QueuePair& qp = pairs_[queue];
    const uint16_t sent = qp.rx.deliver_burst(burst, qp.adaptation);
    if (const virtio::RingFault* fault = qp.rx.take_fault()) {
        report_fault(2u * queue, *fault);
    }
    flush_rx_buffers(queue);
    return sent;
}

void VhostUserPort::set_streaming_stores(bool on) {
    for (QueuePair& p : pairs_) {
        p.adaptation.set_streaming_stores(on);
    }
}

void VhostUserPort::set_adaptive_rx(uint16_t queue, bool on) {
    if (queue >= queue_pairs_) {
        return;
    }
    QueuePair& p = pairs_[queue];
    if (p.rx.set_adaptive_calls(on)) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

uint64_t VhostUserPort::rx_call_deadline(uint16_t queue) const {
    return pairs_[queue].rx.call_deadline();
}

void VhostUserPort::flush_rx_call(uint16_t queue) {
    QueuePair& p = pairs_[queue];
    if (p.rx.take_deferred_call()) {
        notify_guest(p.rx_end.call_fd, tx_counters(queue));
    }
}

// ---- waiting ----------------------------------------------------------------------

WaitSpec VhostUserPort::receive_wait(uint16_t queue) const {
    return WaitSpec{pairs_[queue].tx_end.kick_fd, EPOLLIN, true, &counters_[2u * queue + 1].kicks};
}

WaitSpec VhostUserPort::transmit_wait(uint16_t queue) const {
    return WaitSpec{pairs_[queue].rx_end.kick_fd, EPOLLIN, true, &counters_[2u * queue].kicks};
}

bool VhostUserPort::arm_receive_wait(uint16_t queue) {
    return pairs_[queue].tx.arm_kicks();
}

bool VhostUserPort::arm_transmit_wait(uint16_t queue) {
    return pairs_[queue].rx.arm_kicks();
}

packet::QueueCounters& VhostUserPort::rx_counters(uint16_t queue) {
    return counters_[2u * queue + 1];  // the guest's TX ring
}
packet::QueueCounters& VhostUserPort::tx_counters(uint16_t queue) {
    return counters_[2u * queue];  // the guest's RX ring
}

const virtio::RingFault* VhostUserPort::mapping_fault_at(const RingEnd& e, uintptr_t address) {
    static constexpr virtio::RingFault kMemory{
        "guest memory", "access faulted (SIGBUS): the front end shrank a memory region"};
    static constexpr virtio::RingFault kLog{
        "dirty log", "access faulted (SIGBUS): the front end shrank the log"};
    static constexpr virtio::RingFault kInflight{
        "inflight region", "access faulted (SIGBUS): the front end shrank the inflight buffer"};
    if (e.memory) {
        for (const virtio::GuestRegion& region : e.memory->regions()) {
            if (address - reinterpret_cast<uintptr_t>(region.host_addr) < region.size) {
                return &kMemory;
            }
        }
    }
    if (e.dirty_log && e.dirty_log->holds(address)) {
        return &kLog;
    }
    if (e.inflight_mapping.holds(address)) {
        return &kInflight;
    }
    return nullptr;
}

// A fault in any mapping either ring of the pair holds stops both rings:
// they share the guest's memory and the dirty log, and a ring left running
// beside a lost log would write the guest without marking it (a migration
// that silently copies stale pages). Other pairs of the device, on other
// workers, stop when the report breaks the device; until then any mark
// they make on a lost page faults and stops them the same way, so no bit
// is lost without the device breaking.
void VhostUserPort::on_guest_fault(uint16_t queue, uintptr_t address) {
    QueuePair& p = pairs_[queue];
    const virtio::RingFault* fault = nullptr;
    for (uint32_t ring_index : {2u * queue, 2u * queue + 1}) {
        const bool running = is_tx(ring_index) ? p.tx.running() : p.rx.running();
        if (running && fault == nullptr) {
            fault = mapping_fault_at(end_of(ring_index), address);
        }
    }
    if (fault == nullptr) {
        return;  // another port's mapping
    }
    for (uint32_t ring_index : {2u * queue, 2u * queue + 1}) {
        const bool tx = is_tx(ring_index);
        if (!(tx ? p.tx.running() : p.rx.running())) {
            continue;
        }
        end_of(ring_index).memory_lost = true;
        if (tx) {
            p.tx.stop();
        } else {
            p.rx.stop();
        }
        report_fault(ring_index, *fault);
    }
}

// ---- control thread ---------------------------------------------------------------

void VhostUserPort::report_fault(uint32_t ring_index, const virtio::RingFault& fault) {
    if (on_ring_error_) {
        on_ring_error_(ring_index, std::string(fault.what) + ": " + fault.detail);
    }
}

void VhostUserPort::on_queue_ready(vhost_user::VhostUserDevice& device, uint32_t queue_index) {
    if (queue_index >= 2u * queue_pairs_) {
        return;  // more queue pairs than this port serves: left idle
    }
    vhost_user::QueueSnapshot s = device.queue_snapshot(queue_index);
    bool first = std::none_of(ring_running_.begin(), ring_running_.end(), [](bool b) { return b; });
    if (first && on_features_) {
        on_features_(s.features);
    }
    if (first) {
        log_->info("{}", virtio::describe_format(s.ring));
    }
    const auto pair = static_cast<uint16_t>(queue_index / 2);
    const uint32_t other = queue_index ^ 1u;
    const bool pair_was_idle = !ring_running_[queue_index] && !ring_running_[other];
    ring_running_[queue_index] = true;
    if (pair_was_idle && on_queue_pair_) {
        // Each ring is served on its own kick, so the pair runs once either
        // ring is picked up: whatever serves the other end of it (a tap
        // queue, which takes the TX ring's frames) must be there first.
        on_queue_pair_(pair, true);
    }
    if (ring_running_[other]) {
        const uint16_t entries = virtio::ring_size(s.ring);
        log_->info("queue pair {} running (rings {} and {}, {} entries)", pair, queue_index & ~1u,
                   queue_index | 1u, entries);
    }
    on_owner(queue_index, [&] { start_ring(queue_index, s); });
}

void VhostUserPort::start_ring(uint32_t ring_index, const vhost_user::QueueSnapshot& s) {
    RingEnd& e = end_of(ring_index);
    e = RingEnd{};
    e.memory = s.memory;
    // The device built the ring; an inflight buffer's mapping lives with it.
    e.inflight_mapping = s.inflight_mapping;
    counters_[ring_index].inflight_resumed.add(s.inflight_resumed);
    virtio::AnyDeviceRing ring = s.ring;
    virtio::NetQueueConfig queue_config = virtio::make_net_queue_config(s.features, s.call_fd >= 0);
    e.dirty_log = s.dirty_log;
    if (e.dirty_log) {
        queue_config.log = virtio::QueueLog(e.dirty_log.get(), e.memory.get(), s.log_areas);
    }
    e.kick_fd = s.kick_fd;
    e.call_fd = s.call_fd;
    e.generation = ++generation_counter_;
    QueuePair& p = pair_of(ring_index);
    if (is_tx(ring_index)) {
        p.tx.start(std::move(ring), queue_config);
    } else {
        p.rx.start(std::move(ring), queue_config);
        p.adaptation.set_receiver(virtio::receiver_offloads(s.features));
    }
}

uint32_t VhostUserPort::on_queue_stopped(vhost_user::VhostUserDevice& device,
                                         uint32_t queue_index) {
    if (queue_index >= 2u * queue_pairs_) {
        const vhost_user::QueueSnapshot s = device.queue_snapshot(queue_index);
        return s.vring_base;
    }
    uint32_t last_avail = 0;
    uint16_t untaken = 0;
    const bool tx = is_tx(queue_index);
    // A ring the front end disabled (ethtool -L shrinking the queue pairs)
    // loses what a destination still held because of that, not because the
    // peer went away: the drop says which.
    const packet::DropReason held_drop = device.queue_disabled(queue_index)
                                             ? packet::DropReason::queue_disabled
                                             : packet::DropReason::no_destination;
    const bool pair_was_running = ring_running_[queue_index] && ring_running_[queue_index ^ 1u];
    const bool pair_now_idle = ring_running_[queue_index] && !ring_running_[queue_index ^ 1u];
    ring_running_[queue_index] = false;
    on_owner(queue_index, [&] {
        QueuePair& p = pair_of(queue_index);
        RingEnd& e = end_of(queue_index);
        if (e.memory && !e.memory_lost) {
            // Hostile-input rule 4: the front end may have truncated its
            // memory since the last turn (and then hung up, or sent
            // GET_VRING_BASE). Finishing up is best effort; a fault here
            // means there is nothing left to finish, not a dead daemon.
            uintptr_t fault_address = 0;
            auto finish = [&] {
                if (tx) {
                    untaken = p.tx.finish(held_drop);
                } else if (p.rx.finish()) {
                    notify_guest(e.call_fd, counters_[queue_index]);
                }
            };
            if (!run_guarded(finish, &fault_address)) {
                e.memory_lost = true;
                untaken = 0;
            }
        }
        // Whatever finish could not hand back to the guest (its memory is
        // gone) is dropped, and said so.
        if (tx) {
            p.tx.abandon();
            last_avail = p.tx.vring_base();
            p.tx.stop();
        } else {
            p.rx.abandon();
            last_avail = p.rx.vring_base();
            p.rx.stop();
        }
        e.memory.reset();
        e.dirty_log.reset();
        e.kick_fd = -1;
        e.call_fd = -1;
    });
    const auto pair = static_cast<uint16_t>(queue_index / 2);
    if (pair_now_idle && on_queue_pair_) {
        on_queue_pair_(pair, false);  // the worker let go of both rings
    }
    if (pair_was_running) {
        log_->info(
            "queue pair {} stopped (ring {}{})", pair, queue_index,
            held_drop == packet::DropReason::queue_disabled ? " disabled by the front end" : "");
    }
    if (untaken != 0) {
        // Not drops: the packets stay in the guest's ring, and a front end
        // that restarts the ring from last_avail sends them. A front end
        // that stops right after its last burst (testpmd on SIGINT) counts
        // them as sent, so say how many there were.
        log_->info("ring {} stopped at {}: {} packet(s) the guest queued were not taken",
                   queue_index, vhost_user::describe_vring_base(device.ring_model(), last_avail),
                   untaken);
    }
    return last_avail;
}

// The ring's cursors are the worker's plain state, written on every burst:
// they are read on the owner between its rounds (run_sync, as
// GET_VRING_BASE reads them), so the datapath pays nothing for a command
// an operator types — no atomics to publish, no lock — and the cursors,
// the guest's fields and the counters are one consistent picture. The
// guest's fields are read guarded, as a turn would: a front end that
// shrank its memory stops the ring here as it would on the next burst.
VhostUserPort::RingView VhostUserPort::ring_view(uint32_t ring_index) {
    RingView v;
    if (ring_index >= 2u * queue_pairs_) {
        return v;
    }
    on_owner(ring_index, [&] {
        QueuePair& p = pair_of(ring_index);
        const RingEnd& e = end_of(ring_index);
        const bool tx = is_tx(ring_index);
        v.running = tx ? p.tx.running() : p.rx.running();
        v.memory_lost = e.memory_lost;
        v.kick_fd = e.kick_fd >= 0;
        v.call_fd = e.call_fd >= 0;
        v.kicks = counters_[ring_index].kicks.get();
        v.calls = counters_[ring_index].calls.get();
        v.packets = counters_[ring_index].packets.get();
        v.drops = counters_[ring_index].total_drops();
        v.inflight_resumed = counters_[ring_index].inflight_resumed.get();
        if (!v.running || !e.memory || e.memory_lost) {
            return;
        }
        const virtio::AnyDeviceRing& ring = tx ? p.tx.ring() : p.rx.ring();
        virtio::RingState state;
        uintptr_t fault_address = 0;
        if (run_guarded([&] { state = virtio::read_ring_state(ring); }, &fault_address)) {
            v.state = state;
        } else {
            on_guest_fault(static_cast<uint16_t>(ring_index / 2), fault_address);
            v.memory_lost = true;
        }
    });
    return v;
}

void VhostUserPort::on_call_fd_changed(vhost_user::VhostUserDevice&, uint32_t queue_index,
                                       int call_fd) {
    if (queue_index >= 2u * queue_pairs_) {
        return;
    }
    on_owner(queue_index, [&] {
        end_of(queue_index).call_fd = call_fd;
        QueuePair& p = pair_of(queue_index);
        if (is_tx(queue_index)) {
            p.tx.set_calls_wanted(call_fd >= 0);
        } else {
            p.rx.set_calls_wanted(call_fd >= 0);
        }
    });
}

}  // namespace vnet::ports
