#include "virtio/net/net_tx_queue.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

namespace vnet::virtio {

namespace {

using packet::DropReason;

// A TX packet's burst token: the chain's buffer id and ring slots (both at
// most 32768, so never kNotFromRingToken). Completion goes by in_flight_,
// which holds the same in ring order; the token names the chain for
// whoever reads a burst.
uint32_t make_token(const PoppedChain& c) {
    return uint32_t{c.id} | (uint32_t{c.slots} << 16);
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
        const size_t out_at = burst.iovecs_used;  // where `out` starts in the burst
        size_t next_iov = 0;                      // the chain's iovecs in `out`
        for (uint16_t i = 0; i < popped.count; ++i) {
            if (burst.iovecs_used == out_at + next_iov) {
                // No chain of this pop completed unsent yet: the common
                // ones go in a run, their iovecs where the pop put them.
                const uint16_t run = take_packet_run(
                    std::span<const PoppedChain>(chains.data() + i, popped.count - i), burst);
                i = static_cast<uint16_t>(i + run);
                looked_at = static_cast<uint16_t>(looked_at + run);
                result.taken = static_cast<uint16_t>(result.taken + run);
                next_iov = burst.iovecs_used - out_at;
                if (i == popped.count) {
                    break;
                }
            }
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
                complete_unsent(ring, chain);
                continue;
            }
            const size_t kept_at = burst.iovecs_used - (out.data() - burst.iovecs.data());
            if (kept_at != first_iov) [[unlikely]] {
                std::copy_n(out.begin() + static_cast<ptrdiff_t>(first_iov),
                            chain.readable_segments, out.begin() + static_cast<ptrdiff_t>(kept_at));
            }
            burst.push(chain.readable_segments, chain.readable_bytes, make_token(chain));
            in_flight_[(in_flight_first_ + in_flight_count_) % packet::kMaxBurstPackets] =
                InFlight{chain.id, chain.slots, true};
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
                complete_unsent(ring, chain);
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

uint16_t NetTxQueue::take_packet_run(std::span<const PoppedChain> chains,
                                     packet::PacketBurst& burst) {
    // The counts in locals: the stores into the burst and in_flight_ could
    // alias them, and the compiler would reload them for every chain.
    const uint32_t header = config_.header_size;
    const auto flying = static_cast<uint16_t>(in_flight_first_ + in_flight_count_);
    uint16_t count = burst.count;
    uint16_t used = burst.iovecs_used;
    uint16_t n = 0;
    for (; n < chains.size(); ++n) {
        const PoppedChain& chain = chains[n];
        if (chain.writable_segments != 0 || chain.readable_bytes <= header) {
            break;  // receive_burst decides it
        }
        burst.packets[count++] = packet::BurstPacket{used, chain.readable_segments,
                                                     chain.readable_bytes, make_token(chain)};
        used = static_cast<uint16_t>(used + chain.readable_segments);
        in_flight_[(flying + n) % packet::kMaxBurstPackets] = InFlight{chain.id, chain.slots, true};
    }
    burst.count = count;
    burst.iovecs_used = used;
    in_flight_count_ = static_cast<uint16_t>(in_flight_count_ + n);
    return n;
}

bool NetTxQueue::complete_burst(const packet::PacketBurst& burst, uint16_t done) {
    if (!running_ || done == 0) {
        return false;
    }
    uint64_t bytes = 0;
    uint16_t from_ring = 0;
    for (uint16_t i = 0; i < done; ++i) {
        if (burst.packets[i].token == kNotFromRingToken) [[unlikely]] {
            continue;
        }
        // Copy semantics: the packet left guest memory, the used length is 0
        // (kernel vhost handle_tx_copy). Frame bytes, as the kernel counts.
        bytes += burst.packets[i].len - config_.header_size;
        ++from_ring;
    }
    if (from_ring == 0) {
        return false;  // only the port's own packet: nothing to tell the guest
    }
    return std::visit(
        [&](auto& ring) {
            counters_->count_burst(complete_oldest(ring, from_ring), bytes);
            return publish(ring);
        },
        ring_);
}

template <typename R>
void NetTxQueue::complete_unsent(R& ring, const PoppedChain& chain) {
    if (in_flight_count_ == 0) {
        ring.add_used(chain.id, chain.slots, 0);
        ++pending_used_;
        return;
    }
    // receive_burst takes at most kMaxBurstPackets - in_flight_count_
    // chains, unsent ones included: there is room.
    in_flight_[(in_flight_first_ + in_flight_count_) % packet::kMaxBurstPackets] =
        InFlight{chain.id, chain.slots, false};
    ++in_flight_count_;
    ++in_flight_unsent_;
}

template <typename R>
uint16_t NetTxQueue::complete_oldest(R& ring, uint16_t sent) {
    // The oldest chains up to the `sent`-th sent one, the unsent among them,
    // first counted, then completed in one add_used_n (the ring's fields
    // are not reloaded per entry).
    const uint16_t first = in_flight_first_;
    uint16_t n = std::min(sent, in_flight_count_);
    uint16_t completed = n;
    if (in_flight_unsent_ != 0) [[unlikely]] {
        completed = 0;
        for (n = 0; n < in_flight_count_; ++n) {
            if (in_flight_[(first + n) % packet::kMaxBurstPackets].sent) {
                if (completed == sent) {
                    break;  // held by a destination: everything after it waits
                }
                ++completed;
            }
        }
        in_flight_unsent_ = static_cast<uint16_t>(in_flight_unsent_ - (n - completed));
    }
    ring.add_used_n(n, [&](uint16_t i) {
        const InFlight& f = in_flight_[(first + i) % packet::kMaxBurstPackets];
        return UsedEntry{f.id, f.slots, 0};
    });
    pending_used_ = static_cast<uint16_t>(pending_used_ + n);
    in_flight_first_ = static_cast<uint16_t>((first + n) % packet::kMaxBurstPackets);
    in_flight_count_ = static_cast<uint16_t>(in_flight_count_ - n);
    return completed;
}

uint16_t NetTxQueue::sent_in_flight() const {
    uint16_t n = 0;
    for (uint16_t i = 0; i < in_flight_count_; ++i) {
        n = static_cast<uint16_t>(
            n + (in_flight_[(in_flight_first_ + i) % packet::kMaxBurstPackets].sent ? 1 : 0));
    }
    return n;
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
    counters_->count_drop(held_drop, sent_in_flight());
    return std::visit(
        [&](auto& ring) -> uint16_t {
            complete_oldest(ring, in_flight_count_);
            in_flight_first_ = 0;
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
    counters_->count_drop(DropReason::no_destination, sent_in_flight());
    in_flight_first_ = 0;
    in_flight_count_ = 0;
    in_flight_unsent_ = 0;
}

uint32_t NetTxQueue::vring_base() const {
    return std::visit([](const auto& ring) { return ring.vring_base(); }, ring_);
}

}  // namespace vnet::virtio
