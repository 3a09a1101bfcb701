#include "ports/vhost_user_port.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <variant>

#include "common/guest_fault.hpp"
#include "io/eventfd.hpp"
#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "vhost_user/device.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {

namespace {

// The worker compares deadlines against the same clock (steady_clock is
// CLOCK_MONOTONIC, which its timerfd uses too).
uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

// A TX packet's burst token: the chain's buffer id and ring slots, all its
// used entry needs (both are at most 32768).
uint32_t make_token(const virtio::PoppedChain& c) {
    return uint32_t{c.id} | (uint32_t{c.slots} << 16);
}
uint16_t token_id(uint32_t token) {
    return static_cast<uint16_t>(token);
}
uint16_t token_slots(uint32_t token) {
    return static_cast<uint16_t>(token >> 16);
}

// The avail side itself broke (split: avail->idx jump or a head out of
// range), not one chain: logged as such, as before the ring concept.
bool is_avail_ring_error(virtio::PopStatus s) {
    return s == virtio::PopStatus::avail_index_jump || s == virtio::PopStatus::head_out_of_range;
}

// Buffers the guest has posted that the ring has not taken (given-back ones
// included), as far as the RX hold and park logic needs it. Split: the exact
// count. Packed has no count without walking: 1 if the next slot is
// available, else 0 (the callers only compare it with 0 and with its value
// at park time, and packed parks on enable_notifications instead).
uint16_t avail_left(virtio::SplitDeviceRing& ring) {
    virtio::RingError ignored = virtio::RingError::ok;
    return ring.split().avail_count(&ignored);
}
uint16_t avail_left(virtio::PackedRing& ring) {
    return ring.next_available() ? 1 : 0;
}

}  // namespace

VhostUserPort::VhostUserPort(std::string name, uint16_t queue_pairs, RunOnOwner run_on_owner)
    : Port(std::move(name)),
      queue_pairs_(queue_pairs),
      run_on_owner_(std::move(run_on_owner)),
      log_(make_logger(this->name())),
      rings_(2u * queue_pairs),
      counters_(std::make_unique<QueueCounters[]>(2u * queue_pairs)),
      ring_running_(2u * queue_pairs, false) {
    for (size_t i = 0; i < rings_.size(); ++i) {
        rings_[i].counters = &counters_[i];
    }
}

VhostUserPort::~VhostUserPort() = default;

bool VhostUserPort::queue_ready(uint16_t queue) const {
    return queue < queue_pairs_ && tx_ring(queue).ready && rx_ring(queue).ready;
}

uint32_t VhostUserPort::queue_generation(uint16_t queue) const {
    return tx_ring(queue).generation;
}

// ---- guest TX: push-style source -------------------------------------------------

uint16_t VhostUserPort::receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) {
    Ring& r = tx_ring(queue);
    if (!r.ready) {
        return 0;
    }
    return std::visit(
        [&](auto& ring) { return receive_burst_on(2u * queue + 1, r, ring, burst, max); }, r.ring);
}

template <typename R>
uint16_t VhostUserPort::receive_burst_on(uint32_t ring_index, Ring& r, R& ring,
                                         packet::PacketBurst& burst, uint16_t max) {
    if (r.kicks_enabled) {
        // Kernel vhost handle_tx: no kicks while we are processing anyway.
        ring.disable_notifications();
        r.kicks_enabled = false;
    }
    max = static_cast<uint16_t>(
        std::min<size_t>({max, size_t{packet::kMaxBurstPackets} - burst.count,
                          size_t{packet::kMaxBurstPackets} - r.in_flight_count}));
    uint16_t taken = 0;
    burst.header_size = static_cast<uint16_t>(r.header_size);
    for (uint16_t i = 0; i < max; ++i) {
        virtio::PoppedChain chain;
        virtio::PopStatus s = ring.pop(burst.free_iovecs(), chain);
        if (s == virtio::PopStatus::empty) {
            break;
        }
        if (s == virtio::PopStatus::too_many_segments && burst.iovecs_used != 0) {
            break;  // no room left: the chain stays for the next burst
        }
        if (s == virtio::PopStatus::too_many_segments) {
            // More segments than one write takes (UIO_MAXIOV) even in an
            // empty burst: legal for the guest, impossible for a tap. pop
            // left the chain in the ring; skip consumes it unmapped. The
            // packet is completed unsent and counted; the ring goes on.
            s = ring.skip(chain);
            if (s == virtio::PopStatus::ok) {
                r.counters->count_drop(DropReason::too_many_segments);
                ring.add_used(chain.id, chain.slots, 0);
                ++r.pending_used;
                continue;
            }
            if (s == virtio::PopStatus::empty) {
                break;  // cannot happen: pop just saw it
            }
        }
        if (s != virtio::PopStatus::ok) {
            if (is_avail_ring_error(s)) {
                fail_ring(ring_index, "TX avail ring", virtio::to_string(s));
            } else {
                r.counters->count_drop(DropReason::bad_descriptor_chain);
                fail_ring(ring_index, "TX descriptor chain", virtio::to_string(s));
            }
            return taken;
        }
        if (chain.writable_segments != 0) {
            // Kernel vhost handle_tx: "Unexpected descriptor format for TX".
            r.counters->count_drop(DropReason::bad_descriptor_chain);
            fail_ring(ring_index, "TX descriptor chain", "device-writable buffer in a TX chain");
            return taken;
        }
        if (chain.readable_bytes <= r.header_size) {
            // Nothing beyond the virtio-net header: complete it as dropped.
            r.counters->count_drop(DropReason::packet_too_short);
            ring.add_used(chain.id, chain.slots, 0);
            ++r.pending_used;
            continue;
        }
        burst.push(chain.readable_segments, chain.readable_bytes, make_token(chain));
        r.in_flight[(r.in_flight_first + r.in_flight_count) % packet::kMaxBurstPackets] =
            InFlight{chain.id, chain.slots};
        ++r.in_flight_count;
        ++taken;
    }
    if (taken == 0 && r.pending_used != 0) {
        publish_and_notify(r, ring);
    }
    return taken;
}

void VhostUserPort::complete_burst(uint16_t queue, const packet::PacketBurst& burst,
                                   uint16_t done) {
    Ring& r = tx_ring(queue);
    if (!r.ready || done == 0) {
        return;
    }
    std::visit(
        [&](auto& ring) {
            uint64_t bytes = 0;
            for (uint16_t i = 0; i < done; ++i) {
                // Copy semantics: the packet left guest memory, the used length is 0
                // (kernel vhost handle_tx_copy).
                const uint32_t token = burst.packets[i].token;
                ring.add_used(token_id(token), token_slots(token), 0);
                bytes += burst.packets[i].len - r.header_size;  // frame bytes, as the kernel counts
            }
            done = std::min(done, r.in_flight_count);
            r.in_flight_first =
                static_cast<uint16_t>((r.in_flight_first + done) % packet::kMaxBurstPackets);
            r.in_flight_count = static_cast<uint16_t>(r.in_flight_count - done);
            r.pending_used = static_cast<uint16_t>(r.pending_used + done);
            r.counters->count_burst(done, bytes);
            publish_and_notify(r, ring);
        },
        r.ring);
}

template <typename R>
void VhostUserPort::complete_in_flight_as_dropped(Ring& r, R& ring, DropReason reason) {
    for (uint16_t i = 0; i < r.in_flight_count; ++i) {
        const InFlight& f = r.in_flight[(r.in_flight_first + i) % packet::kMaxBurstPackets];
        ring.add_used(f.id, f.slots, 0);
    }
    r.counters->count_drop(reason, r.in_flight_count);
    r.pending_used = static_cast<uint16_t>(r.pending_used + r.in_flight_count);
    r.in_flight_first = 0;
    r.in_flight_count = 0;
}

// ---- guest RX: fill-style destination ------------------------------------------

template <typename R>
void VhostUserPort::stage_rx_used(Ring& r, R& ring) {
    for (uint16_t i = r.window_staged; i < r.window_pos; ++i) {
        const RxHead& h = r.window[i];
        ring.add_used(h.id, h.slots, h.filled);
    }
    r.window_staged = r.window_pos;
}

template <typename R>
void VhostUserPort::reset_rx_window(Ring& r, R& ring) {
    stage_rx_used(r, ring);
    if (r.window_pos != r.window_count) {
        // Everything from the first unused chain on goes back, as seen.
        ring.rewind(r.window[r.window_pos].before);
    }
    r.window_count = 0;
    r.window_pos = 0;
    r.window_staged = 0;
    r.window_taken = 0;
    r.window_iovecs_used = 0;
}

// Pops up to kRxRefillChains more chains into the window (one visit of the
// ring). Returns false if the ring broke.
template <typename R>
bool VhostUserPort::refill_rx_window(uint32_t ring_index, Ring& r, R& ring) {
    const auto want =
        static_cast<uint16_t>(std::min<size_t>(kRxWindowHeads - r.window_count, kRxRefillChains));
    uint16_t added = 0;
    while (added < want && r.window_iovecs_used < packet::kMaxBurstIovecs) {
        const virtio::RingPosition before = ring.position();
        virtio::PoppedChain chain;
        std::span<iovec> free(r.window_iovecs.data() + r.window_iovecs_used,
                              packet::kMaxBurstIovecs - r.window_iovecs_used);
        const virtio::PopStatus s = ring.pop(free, chain);
        if (s == virtio::PopStatus::empty) {
            if (added == 0) {
                r.rx_starved = true;  // held frames must go out now: see should_hold_rx_publish
            }
            break;
        }
        if (s == virtio::PopStatus::too_many_segments && r.window_iovecs_used != 0) {
            break;  // stays in the ring (pop left it there) for the next window
        }
        const bool readable = s == virtio::PopStatus::ok && chain.readable_segments != 0;
        if (s != virtio::PopStatus::ok || readable) {
            if (added != 0) {
                // Popped ahead of need: give it back, and break the ring only
                // when a packet really needs this chain (the next refill).
                ring.rewind(before);
                break;
            }
            if (readable) {
                // Kernel vhost handle_rx: a device-readable buffer on RX is invalid.
                fail_ring(ring_index, "RX descriptor chain",
                          "device-readable buffer in an RX chain");
            } else {
                fail_ring(ring_index,
                          is_avail_ring_error(s) ? "RX avail ring" : "RX descriptor chain",
                          virtio::to_string(s));
            }
            return false;
        }
        r.window[r.window_count++] = RxHead{chain.id,
                                            chain.slots,
                                            before,
                                            r.window_iovecs_used,
                                            chain.writable_segments,
                                            chain.writable_bytes,
                                            0};
        r.window_iovecs_used =
            static_cast<uint16_t>(r.window_iovecs_used + chain.writable_segments);
        ++added;
    }
    return true;
}

bool VhostUserPort::grow_rx_window(uint32_t ring_index, Ring& r, uint32_t need_bytes) {
    uint64_t have = 0;
    for (uint16_t i = r.window_pos; i < r.window_count; ++i) {
        have += r.window[i].bytes;
    }
    auto covered = [&] { return r.mergeable ? have >= need_bytes : r.window_count > r.window_pos; };
    while (!covered()) {
        if (r.window_count == kRxWindowHeads || r.window_iovecs_used == packet::kMaxBurstIovecs) {
            return false;  // the burst's window is full: flush, then start a new one
        }
        const uint16_t before = r.window_count;
        const bool ok =
            std::visit([&](auto& ring) { return refill_rx_window(ring_index, r, ring); }, r.ring);
        if (!ok) {
            return false;
        }
        if (r.window_count == before) {
            // Nothing came: the guest has not posted enough buffers (park),
            // or the next chain needs more iovecs than the window has left.
            return false;
        }
        for (uint16_t i = before; i < r.window_count; ++i) {
            have += r.window[i].bytes;
        }
    }
    return true;
}

bool VhostUserPort::next_rx_buffer(uint16_t queue, uint32_t max_packet,
                                   std::span<const iovec>* out) {
    Ring& r = rx_ring(queue);
    if (!r.ready) {
        return false;
    }
    if (r.kicks_enabled) {
        std::visit([](auto& ring) { ring.disable_notifications(); }, r.ring);  // once per wake-up
        r.kicks_enabled = false;
    }
    if (!grow_rx_window(2u * queue, r, max_packet)) {
        return false;
    }
    uint16_t k = 1;
    if (r.mergeable) {
        uint64_t bytes = r.window[r.window_pos].bytes;
        while (bytes < max_packet) {
            bytes += r.window[r.window_pos + k].bytes;
            ++k;
        }
    }
    const RxHead& first = r.window[r.window_pos];
    const RxHead& last = r.window[r.window_pos + k - 1];
    *out = std::span<const iovec>(
        r.window_iovecs.data() + first.first_iov,
        static_cast<size_t>(last.first_iov + last.iov_count - first.first_iov));
    r.window_taken = k;
    r.requested_max = max_packet;
    return true;
}

void VhostUserPort::commit_rx_buffer(uint16_t queue, uint32_t len) {
    Ring& r = rx_ring(queue);
    if (!r.ready || r.window_taken == 0) {
        return;
    }
    const RxHead& first = r.window[r.window_pos];
    if (!r.mergeable && len >= first.bytes && first.bytes < r.requested_max) {
        // One buffer per packet and the guest's was too small: the read was
        // truncated. Count it; the buffer is reused for the next packet.
        r.counters->count_drop(DropReason::rx_buffer_too_small);
        r.window_taken = 0;
        return;
    }
    // How many of the lent heads the packet really filled.
    uint16_t used_heads = 1;
    if (r.mergeable) {
        uint64_t bytes = first.bytes;
        while (bytes < len && used_heads < r.window_taken) {
            bytes += r.window[r.window_pos + used_heads].bytes;
            ++used_heads;
        }
    }
    if (r.write_num_buffers) {
        std::span<const iovec> header(r.window_iovecs.data() + first.first_iov,
                                      r.window_iovecs_used - first.first_iov);
        // The header may be split over tiny buffers by a guest.
        uint8_t num_buffers[2];
        packet::store_le16(num_buffers, used_heads);
        packet::scatter_at(header, virtio::kNetHeaderNumBuffersOffset, num_buffers,
                           sizeof num_buffers);
    }
    uint32_t remaining = len;
    for (uint16_t i = 0; i < used_heads; ++i) {
        RxHead& h = r.window[r.window_pos + i];
        h.filled = std::min(remaining, h.bytes);  // staged at flush (stage_rx_used)
        remaining -= h.filled;
    }
    r.window_pos = static_cast<uint16_t>(r.window_pos + used_heads);
    r.window_taken = 0;
    r.pending_used = static_cast<uint16_t>(r.pending_used + used_heads);
    ++r.burst_packets;
    r.burst_bytes += len - std::min(len, r.header_size);
}

void VhostUserPort::flush_rx_buffers(uint16_t queue) {
    Ring& r = rx_ring(queue);
    if (!r.ready) {
        return;
    }
    std::visit(
        [&](auto& ring) {
            reset_rx_window(r, ring);
            r.parked_avail = avail_left(ring);
            if (r.pending_used != 0) {
                if (should_hold_rx_publish(r, r.parked_avail)) {
                    // A turn that found nothing flushes too: count only the bursts
                    // that brought frames, each one a publish the guest did not get.
                    if (r.burst_packets != r.held_packets) {
                        r.counters->publishes_coalesced.add(1);
                        r.held_packets = r.burst_packets;
                    }
                } else {
                    publish_rx(r, ring);
                }
            }
        },
        r.ring);
    r.rx_starved = false;
}

// rx_frames is a minimum per publish, checked at the end of a burst: a burst
// is never split, since publishing mid-burst would only add notifies.
bool VhostUserPort::should_hold_rx_publish(Ring& r, uint16_t avail_left) {
    const RxCoalescing& c = r.coalescing;
    // A guest refills its RX ring when it sees used entries: holding while
    // it has no buffers left would stall both sides until the deadline.
    if (c.frames == 0 || r.burst_packets >= c.frames || r.rx_starved || avail_left == 0) {
        return false;
    }
    if (r.held_deadline == 0) {
        // One clock read per coalesced publish, not per packet.
        r.held_deadline = c.usecs == 0 ? kHeldUntilRoundEnd : now_ns() + uint64_t{c.usecs} * 1000;
    }
    return true;
}

template <typename R>
void VhostUserPort::publish_rx(Ring& r, R& ring) {
    publish_and_notify(r, ring);
    // Counted when the guest can see them: a burst is one publish.
    r.counters->count_burst(r.burst_packets, r.burst_bytes);
    r.burst_packets = 0;
    r.burst_bytes = 0;
    r.held_packets = 0;
    r.held_deadline = 0;
}

void VhostUserPort::set_rx_coalescing(uint16_t queue, uint32_t frames, uint32_t usecs) {
    if (queue >= queue_pairs_) {
        return;
    }
    // More frames than a ring holds could never be pending: the count is a
    // u16 (config validation keeps it far lower anyway).
    rx_ring(queue).coalescing = RxCoalescing{std::min(frames, virtio::kMaxQueueSize), usecs};
    if (frames == 0) {
        publish_held_rx(queue);  // turned off: nothing may stay held without a deadline
    }
}

uint64_t VhostUserPort::rx_held_deadline(uint16_t queue) const {
    const Ring& r = rx_ring(queue);
    return r.ready ? r.held_deadline : 0;  // a stopped ring publishes in finish_ring
}

void VhostUserPort::publish_held_rx(uint16_t queue) {
    Ring& r = rx_ring(queue);
    if (!r.ready || r.pending_used == 0) {
        return;
    }
    std::visit([&](auto& ring) { publish_rx(r, ring); }, r.ring);
}

uint16_t VhostUserPort::transmit_burst(uint16_t queue, const packet::PacketBurst& burst) {
    // Another port's packets into this guest: one copy, straight into its
    // RX buffers.
    uint16_t sent = 0;
    while (sent < burst.count) {
        const packet::BurstPacket& p = burst.packets[sent];
        std::span<const iovec> buffer;
        if (!next_rx_buffer(queue, p.len, &buffer)) {
            break;
        }
        packet::copy_iovecs(buffer, burst.packet_iovecs(sent), p.len);
        commit_rx_buffer(queue, p.len);
        ++sent;
    }
    flush_rx_buffers(queue);
    return sent;
}

// ---- notifications and waiting -------------------------------------------------

template <typename R>
void VhostUserPort::publish_and_notify(Ring& r, R& ring) {
    stage_rx_used(r, ring);  // RX heads filled since the last flush (none on TX)
    ring.publish_used();
    r.pending_used = 0;
    if (r.call_fd >= 0 && ring.should_notify()) {
        io::signal_eventfd(r.call_fd);
    }
}

WaitSpec VhostUserPort::receive_wait(uint16_t queue) const {
    return WaitSpec{tx_ring(queue).kick_fd, EPOLLIN, true};
}

WaitSpec VhostUserPort::transmit_wait(uint16_t queue) const {
    return WaitSpec{rx_ring(queue).kick_fd, EPOLLIN, true};
}

bool VhostUserPort::arm_receive_wait(uint16_t queue) {
    Ring& r = tx_ring(queue);
    if (!r.ready) {
        return true;
    }
    r.kicks_enabled = true;
    return !std::visit([](auto& ring) { return ring.enable_notifications(); }, r.ring);
}

bool VhostUserPort::arm_transmit_wait(uint16_t queue) {
    Ring& r = rx_ring(queue);
    if (!r.ready) {
        return true;
    }
    r.kicks_enabled = true;
    if (auto* split = std::get_if<virtio::SplitDeviceRing>(&r.ring)) {
        split->enable_notifications();
        // Compare with what was there when the path parked, not with our own
        // (rewound) index: otherwise buffers we gave back look new and the path
        // never sleeps (the 2026 vhost_net handle_rx livelock).
        return avail_left(*split) <= r.parked_avail;
    }
    // Packed: enable_notifications already ignores given-back chains.
    return !std::get<virtio::PackedRing>(r.ring).enable_notifications();
}

QueueCounters& VhostUserPort::rx_counters(uint16_t queue) {
    return *tx_ring(queue).counters;
}
QueueCounters& VhostUserPort::tx_counters(uint16_t queue) {
    return *rx_ring(queue).counters;
}

void VhostUserPort::on_guest_fault(uint16_t queue, uintptr_t address) {
    for (uint32_t ring_index : {2u * queue, 2u * queue + 1}) {
        Ring& r = rings_[ring_index];
        if (!r.ready || !r.memory) {
            continue;
        }
        for (const virtio::GuestRegion& region : r.memory->regions()) {
            auto start = reinterpret_cast<uintptr_t>(region.host_addr);
            if (address - start < region.size) {
                r.memory_lost = true;
                fail_ring(ring_index, "guest memory",
                          "access faulted (SIGBUS): the front end shrank a memory region");
                break;
            }
        }
    }
}

// ---- control thread ---------------------------------------------------------------

void VhostUserPort::fail_ring(uint32_t ring_index, const char* what, const char* detail) {
    rings_[ring_index].ready = false;  // this worker stops touching it at once
    if (on_ring_error_) {
        on_ring_error_(ring_index, std::string(what) + ": " + detail);
    }
}

void VhostUserPort::on_queue_ready(vhost_user::VhostUserDevice& device, uint32_t queue_index) {
    if (queue_index >= rings_.size()) {
        return;  // more queue pairs than this port serves: left idle
    }
    vhost_user::QueueSnapshot s = device.queue_snapshot(queue_index);
    bool first = std::none_of(ring_running_.begin(), ring_running_.end(), [](bool b) { return b; });
    if (first && on_features_) {
        on_features_(s.features);
    }
    if (first) {
        log_->info(
            "{} rings{}", s.format == vhost_user::RingFormat::packed ? "packed" : "split",
            s.format == vhost_user::RingFormat::packed ? " (VIRTIO_F_RING_PACKED negotiated)" : "");
    }
    const auto pair = static_cast<uint16_t>(queue_index / 2);
    const uint32_t other = queue_index ^ 1u;
    ring_running_[queue_index] = true;
    if (ring_running_[other]) {
        // The pair runs once this ring is picked up: whatever serves the
        // other end of it (a tap queue) must be there first.
        if (on_queue_pair_) {
            on_queue_pair_(pair, true);
        }
        log_->info("queue pair {} running (rings {} and {}, {} entries)", pair, queue_index & ~1u,
                   queue_index | 1u, s.layout.size);
    }
    on_owner(queue_index, [&] {
        Ring& r = rings_[queue_index];
        QueueCounters* counters = r.counters;
        RxCoalescing coalescing = r.coalescing;
        r = Ring{};
        r.counters = counters;
        r.coalescing = coalescing;
        r.memory = s.memory;
        const virtio::RingConfig config{r.memory.get(),
                                        s.features.has(virtio::Feature::ring_indirect_desc),
                                        s.features.has(virtio::Feature::ring_event_idx)};
        if (s.format == vhost_user::RingFormat::packed) {
            virtio::PackedRing packed(s.packed_layout, config);
            // The device validated the base against the size (SET_VRING_BASE).
            packed.restore_vring_base(s.packed_base);
            r.ring = std::move(packed);
        } else {
            virtio::SplitDeviceRing split(s.layout, config, s.used_idx);
            split.restore_vring_base(s.last_avail_idx);  // 16 bits: cannot fail
            r.ring = std::move(split);
        }
        r.features = s.features;
        r.header_size = static_cast<uint32_t>(virtio::net_header_size(s.features));
        r.mergeable = s.features.has(virtio::Feature::net_mrg_rxbuf);
        r.write_num_buffers = r.mergeable || s.features.has(virtio::Feature::version_1);
        r.kick_fd = s.kick_fd;
        r.call_fd = s.call_fd;
        r.generation = ++generation_counter_;
        r.ready = true;
    });
}

uint32_t VhostUserPort::on_queue_stopped(vhost_user::VhostUserDevice& device,
                                         uint32_t queue_index) {
    if (queue_index >= rings_.size()) {
        const vhost_user::QueueSnapshot s = device.queue_snapshot(queue_index);
        return s.format == vhost_user::RingFormat::packed ? s.packed_base : s.last_avail_idx;
    }
    uint32_t last_avail = 0;
    uint16_t untaken = 0;
    const bool is_tx = (queue_index % 2) == 1;
    // A ring the front end disabled (ethtool -L shrinking the queue pairs)
    // loses what a destination still held because of that, not because the
    // peer went away: the drop says which.
    const DropReason held_drop = device.queue_disabled(queue_index) ? DropReason::queue_disabled
                                                                    : DropReason::no_destination;
    const bool pair_was_running = ring_running_[queue_index] && ring_running_[queue_index ^ 1u];
    ring_running_[queue_index] = false;
    on_owner(queue_index, [&] {
        Ring& r = rings_[queue_index];
        if (r.memory && !r.memory_lost) {
            // Hostile-input rule 4: the front end may have truncated its
            // memory since the last turn (and then hung up, or sent
            // GET_VRING_BASE). Finishing up is best effort; a fault here
            // means there is nothing left to finish, not a dead daemon.
            uintptr_t fault_address = 0;
            auto finish = [&] {
                untaken = std::visit(
                    [&](auto& ring) { return finish_ring(r, ring, is_tx, held_drop); }, r.ring);
            };
            if (!run_guarded(finish, &fault_address)) {
                r.memory_lost = true;
                untaken = 0;
            }
        }
        if (r.memory_lost && r.in_flight_count != 0) {
            // The guest's ring is gone: what a destination still held is
            // dropped without a used entry.
            r.counters->count_drop(DropReason::no_destination, r.in_flight_count);
            r.in_flight_first = 0;
            r.in_flight_count = 0;
        }
        if (r.burst_packets != 0) {
            // RX frames held for coalescing that the guest can no longer be
            // told about (its memory is gone): dropped, and said so.
            r.counters->count_drop(DropReason::no_destination, r.burst_packets);
            r.burst_packets = 0;
            r.burst_bytes = 0;
            r.held_packets = 0;
            r.held_deadline = 0;
        }
        last_avail = std::visit([](const auto& ring) { return ring.vring_base(); }, r.ring);
        r.ready = false;
        r.memory.reset();
        r.kick_fd = -1;
        r.call_fd = -1;
    });
    if (pair_was_running) {
        const auto pair = static_cast<uint16_t>(queue_index / 2);
        if (on_queue_pair_) {
            on_queue_pair_(pair, false);  // the worker let go of it above
        }
        log_->info("queue pair {} stopped (ring {}{})", pair, queue_index,
                   held_drop == DropReason::queue_disabled ? " disabled by the front end" : "");
    }
    if (untaken != 0) {
        // Not drops: the packets stay in the guest's ring, and a front end
        // that restarts the ring from last_avail sends them. A front end
        // that stops right after its last burst (testpmd on SIGINT) counts
        // them as sent, so say how many there were.
        log_->info(
            "ring {} stopped at avail index {}: {} packet(s) the guest queued were not taken",
            queue_index, last_avail, untaken);
    }
    return last_avail;
}

template <typename R>
uint16_t VhostUserPort::finish_ring(Ring& r, R& ring, bool is_tx, DropReason held_drop) {
    // Finish what is ours to finish while the memory is still held:
    // publish completed entries, give back unused RX heads, and complete
    // TX packets a destination still holds as dropped.
    if (is_tx) {
        complete_in_flight_as_dropped(r, ring, held_drop);
    } else {
        reset_rx_window(r, ring);
        if (r.pending_used != 0) {
            // Frames held for rx_frames / rx_usecs: the guest gets them (and
            // the call it would have had) before the ring stops; a restart
            // begins at the guest's used index and would reuse their buffers.
            publish_rx(r, ring);
        }
    }
    if (r.pending_used != 0) {
        ring.publish_used();
        r.pending_used = 0;
    }
    if constexpr (std::is_same_v<R, virtio::SplitDeviceRing>) {
        if (!is_tx || !r.ready) {
            return 0;
        }
        // A fresh read: avail_count() may answer from its cached index.
        const virtio::SplitRing& split = ring.split();
        const uint16_t avail_idx =
            std::atomic_ref<uint16_t>(split.layout().avail->idx).load(std::memory_order_acquire);
        const auto untaken = static_cast<uint16_t>(avail_idx - split.last_avail_idx());
        return untaken > split.size() ? 0
                                      : untaken;  // a guest that broke the rules: nothing to report
    } else {
        // Packed: no index to subtract; walk the flags (once, at stop).
        return is_tx && r.ready ? ring.available_chains() : 0;
    }
}

void VhostUserPort::on_call_fd_changed(vhost_user::VhostUserDevice&, uint32_t queue_index,
                                       int call_fd) {
    if (queue_index >= rings_.size()) {
        return;
    }
    on_owner(queue_index, [&] { rings_[queue_index].call_fd = call_fd; });
}

}  // namespace vnet::ports
