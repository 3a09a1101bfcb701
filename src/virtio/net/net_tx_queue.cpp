#include "virtio/net/net_tx_queue.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace vnet::virtio {

namespace {

using packet::DropReason;

// A TX packet's burst token: the chain's buffer id and ring slots, all its
// used entry needs (both are at most 32768).
uint32_t make_token(const PoppedChain& c) {
    return uint32_t{c.id} | (uint32_t{c.slots} << 16);
}
uint16_t token_id(uint32_t token) {
    return static_cast<uint16_t>(token);
}
uint16_t token_slots(uint32_t token) {
    return static_cast<uint16_t>(token >> 16);
}

}  // namespace

void NetTxQueue::start(AnyDeviceRing ring, const NetQueueConfig& config) {
    packet::QueueCounters* counters = counters_;
    *this = NetTxQueue(*counters);
    ring_ = std::move(ring);
    config_ = config;
    running_ = true;
}

void NetTxQueue::fail(RingFault fault) {
    running_ = false;
    fault_ = fault;
    fault_new_ = true;
}

NetTxQueue::Received NetTxQueue::receive_burst(packet::PacketBurst& burst, uint16_t max) {
    if (!running_) {
        return {};
    }
    return std::visit([&](auto& ring) { return receive_burst_on(ring, burst, max); }, ring_);
}

template <typename R>
NetTxQueue::Received NetTxQueue::receive_burst_on(R& ring, packet::PacketBurst& burst,
                                                  uint16_t max) {
    if (kicks_enabled_) {
        // Kernel vhost handle_tx: no kicks while we are processing anyway.
        ring.disable_notifications();
        kicks_enabled_ = false;
    }
    max = static_cast<uint16_t>(
        std::min<size_t>({max, size_t{packet::kMaxBurstPackets} - burst.count,
                          size_t{packet::kMaxBurstPackets} - in_flight_count_}));
    Received result;
    burst.header_size = static_cast<uint16_t>(config_.header_size);
    std::array<PoppedChain, packet::kMaxBurstPackets>& chains = popped_;
    uint16_t looked_at = 0;  // chains taken or completed unsent: each counts against max
    while (looked_at < max) {
        // One pop for the burst; the chains' iovecs lie one after another
        // from free_iovecs() on, and each one kept moves down over the
        // iovecs of the chains completed unsent before it.
        const std::span<iovec> out = burst.free_iovecs();
        const BurstPop popped =
            ring.pop_burst(out, std::span<PoppedChain>(chains.data(), max - looked_at), {});
        size_t next_iov = 0;  // the chain's iovecs in `out`
        for (uint16_t i = 0; i < popped.count; ++i) {
            const PoppedChain& chain = chains[i];
            const size_t first_iov = next_iov;
            next_iov += chain.segment_count();
            ++looked_at;
            if (chain.writable_segments != 0) {
                // Kernel vhost handle_tx: "Unexpected descriptor format for TX".
                counters_->count_drop(DropReason::bad_descriptor_chain);
                fail({"TX descriptor chain", "device-writable buffer in a TX chain"});
                return result;
            }
            if (chain.readable_bytes <= config_.header_size) {
                // Nothing beyond the virtio-net header: complete it as dropped.
                counters_->count_drop(DropReason::packet_too_short);
                ring.add_used(chain.id, chain.slots, 0);
                ++pending_used_;
                continue;
            }
            const size_t kept_at = burst.iovecs_used - (out.data() - burst.iovecs.data());
            if (kept_at != first_iov) [[unlikely]] {
                std::copy_n(out.begin() + static_cast<ptrdiff_t>(first_iov),
                            chain.readable_segments, out.begin() + static_cast<ptrdiff_t>(kept_at));
            }
            burst.push(chain.readable_segments, chain.readable_bytes, make_token(chain));
            in_flight_[(in_flight_first_ + in_flight_count_) % packet::kMaxBurstPackets] =
                InFlight{chain.id, chain.slots};
            ++in_flight_count_;
            ++result.taken;
        }
        PopStatus s = popped.status;
        if (s == PopStatus::ok) {
            continue;  // the span was filled: max reached
        }
        if (s == PopStatus::empty) {
            break;
        }
        if (s == PopStatus::too_many_segments &&
            burst.free_iovecs().size() != out.size() - next_iov) {
            // Chains completed unsent held iovecs this pop counted against
            // the chain: pop it again with the room they left.
            continue;
        }
        if (s == PopStatus::too_many_segments && burst.iovecs_used != 0) {
            break;  // no room left: the chain stays for the next burst
        }
        if (s == PopStatus::too_many_segments) {
            // More segments than one write takes (UIO_MAXIOV) even in an
            // empty burst: legal for the guest, impossible for a tap. pop
            // left the chain in the ring; skip consumes it unmapped. The
            // packet is completed unsent and counted; the ring goes on.
            PoppedChain chain;
            s = ring.skip(chain);
            if (s == PopStatus::ok) {
                counters_->count_drop(DropReason::too_many_segments);
                ring.add_used(chain.id, chain.slots, 0);
                ++pending_used_;
                ++looked_at;
                continue;
            }
            if (s == PopStatus::empty) {
                break;  // cannot happen: pop just saw it
            }
        }
        if (s != PopStatus::avail_index_jump && s != PopStatus::head_out_of_range) {
            counters_->count_drop(DropReason::bad_descriptor_chain);
        }
        fail(pop_fault(true, s));
        return result;
    }
    if (result.taken == 0 && pending_used_ != 0) {
        result.notify = publish(ring);
    }
    return result;
}

bool NetTxQueue::complete_burst(const packet::PacketBurst& burst, uint16_t done) {
    if (!running_ || done == 0) {
        return false;
    }
    return std::visit(
        [&](auto& ring) {
            uint64_t bytes = 0;
            uint16_t from_ring = 0;
            for (uint16_t i = 0; i < done; ++i) {
                // Copy semantics: the packet left guest memory, the used length is 0
                // (kernel vhost handle_tx_copy).
                const uint32_t token = burst.packets[i].token;
                if (token == kNotFromRingToken) [[unlikely]] {
                    continue;
                }
                ring.add_used(token_id(token), token_slots(token), 0);
                bytes += burst.packets[i].len -
                         config_.header_size;  // frame bytes, as the kernel counts
                ++from_ring;
            }
            if (from_ring == 0) {
                return false;  // only the port's own packet: nothing to tell the guest
            }
            done = std::min(from_ring, in_flight_count_);
            in_flight_first_ =
                static_cast<uint16_t>((in_flight_first_ + done) % packet::kMaxBurstPackets);
            in_flight_count_ = static_cast<uint16_t>(in_flight_count_ - done);
            pending_used_ = static_cast<uint16_t>(pending_used_ + done);
            counters_->count_burst(done, bytes);
            return publish(ring);
        },
        ring_);
}

template <typename R>
bool NetTxQueue::publish(R& ring) {
    ring.publish_used();
    pending_used_ = 0;
    if (config_.log.active()) [[unlikely]] {
        config_.log.mark_ring();
    }
    return config_.calls_wanted && ring.should_notify();
}

bool NetTxQueue::arm_kicks() {
    if (!running_) {
        return true;
    }
    kicks_enabled_ = true;
    const bool new_work = std::visit([](auto& ring) { return ring.enable_notifications(); }, ring_);
    if (config_.log.active()) [[unlikely]] {
        config_.log.mark_ring();  // the flags or event area just written
    }
    return !new_work;
}

uint16_t NetTxQueue::finish(DropReason held_drop) {
    return std::visit(
        [&](auto& ring) -> uint16_t {
            for (uint16_t i = 0; i < in_flight_count_; ++i) {
                const InFlight& f = in_flight_[(in_flight_first_ + i) % packet::kMaxBurstPackets];
                ring.add_used(f.id, f.slots, 0);
            }
            counters_->count_drop(held_drop, in_flight_count_);
            pending_used_ = static_cast<uint16_t>(pending_used_ + in_flight_count_);
            in_flight_first_ = 0;
            in_flight_count_ = 0;
            if (pending_used_ != 0) {
                ring.publish_used();
                pending_used_ = 0;
            }
            if (config_.log.active()) [[unlikely]] {
                config_.log.mark_ring();  // the ring as we leave it, whatever wrote it last
            }
            return running_ ? ring.untaken_chains() : 0;
        },
        ring_);
}

void NetTxQueue::abandon() {
    if (in_flight_count_ != 0) {
        counters_->count_drop(DropReason::no_destination, in_flight_count_);
        in_flight_first_ = 0;
        in_flight_count_ = 0;
    }
}

uint32_t NetTxQueue::vring_base() const {
    return std::visit([](const auto& ring) { return ring.vring_base(); }, ring_);
}

}  // namespace vnet::virtio
