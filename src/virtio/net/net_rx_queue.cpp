#include "virtio/net/net_rx_queue.hpp"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "virtio/ring/queue_size.hpp"

namespace vnet::virtio {

namespace {

using packet::DropReason;

}  // namespace

void NetRxQueue::start(AnyDeviceRing ring, const NetQueueConfig& config) {
    // The window is large (its iovecs): reset field by field, not by a
    // temporary copy.
    ring_ = std::move(ring);
    config_ = config;
    partial_ = PartialDelivery{};
    running_ = true;
    kicks_enabled_ = true;
    fault_new_ = false;
    starved_ = false;
    fault_ = RingFault{};
    pending_used_ = 0;
    parked_avail_ = 0;
    burst_packets_ = 0;
    held_packets_ = 0;
    burst_bytes_ = 0;
    held_deadline_ = 0;
    held_by_stream_ = false;
    flush_now_ns_ = 0;
    pacer_.reset();
    call_deadline_ = 0;
    window_ = RxWindow{};
}

void NetRxQueue::fail(RingFault fault) {
    running_ = false;
    fault_ = fault;
    fault_new_ = true;
}

// ---- per packet: the window only ----------------------------------------------

bool NetRxQueue::next_buffer_from_ring(uint32_t max_packet, std::span<const iovec>* out) {
    if (!running_) {
        return false;
    }
    if (kicks_enabled_) {
        std::visit([](auto& ring) { ring.disable_notifications(); }, ring_);  // once per wake-up
        kicks_enabled_ = false;
    }
    if (!grow_window(max_packet)) {
        return false;
    }
    *out = window_.lend(max_packet, config_.mergeable);
    return true;
}

uint16_t NetRxQueue::lend_buffers(uint32_t max_packet, uint16_t max, packet::PacketBurst& out) {
    if (!running_) {
        return 0;
    }
    if (kicks_enabled_) {
        std::visit([](auto& ring) { ring.disable_notifications(); }, ring_);
        kicks_enabled_ = false;
    }
    uint16_t n = 0;
    uint16_t i = window_.first_unlent();
    while (n < max && !out.full()) {
        if (i == window_.size()) {
            if (window_.full() && make_room()) {
                i = window_.first_unlent();
            }
            if (window_.full() ||
                !std::visit([&](auto& ring) { return refill_window(ring); }, ring_) ||
                i == window_.size()) {
                break;  // unlent heads fill the window, the guest posted no more, or the ring broke
            }
        }
        const std::span<const iovec> head = window_.head_iovecs(i);
        if (window_.head(i).bytes < max_packet || head.size() > out.free_iovecs().size()) {
            break;
        }
        std::copy(head.begin(), head.end(), out.free_iovecs().begin());
        out.push(static_cast<uint16_t>(head.size()), window_.head(i).bytes, i);
        ++n;
        ++i;
    }
    if (!running_) {
        return 0;  // the ring broke: nothing was read into them yet
    }
    batch_max_packet_ = max_packet;
    return n;
}

void NetRxQueue::commit_buffers(std::span<const int> lengths) {
    // Each lent head holds a whole packet: lend it alone and commit it, so
    // numbering, counting and early publishing are commit_buffer's own.
    for (const int len : lengths) {
        if (!running_ || !window_.has_unlent()) {
            return;
        }
        window_.lend(batch_max_packet_, config_.mergeable);
        commit_buffer(static_cast<uint32_t>(len));
    }
}

inline void NetRxQueue::commit_lent(uint32_t len, bool header_says_one) {
    const RxWindow::Head& first = window_.first_lent();
    if (!config_.mergeable && len >= first.bytes && first.bytes < window_.requested_max()) {
        // One buffer per packet and the guest's was too small: the read was
        // truncated. Count it; the buffer is reused for the next packet.
        counters_->count_drop(DropReason::rx_buffer_too_small);
        window_.cancel();
        return;
    }
    const uint16_t used_heads =
        window_.commit(len, config_.mergeable, config_.write_num_buffers, header_says_one);
    pending_used_ = static_cast<uint16_t>(pending_used_ + used_heads);
    ++burst_packets_;
    burst_bytes_ += len - std::min(len, config_.header_size);
    // Coalescing holds publishes on purpose; otherwise a big frame is shown
    // to the guest at once.
    if (len >= kEarlyPublishBytes && coalescing_.frames == 0) [[unlikely]] {
        publish_early_now();
    }
}

void NetRxQueue::commit_buffer(uint32_t len) {
    if (!running_ || !window_.lent()) {
        return;
    }
    commit_lent(len, false);
}

void NetRxQueue::publish_early_now() {
    std::visit([&](auto& ring) { publish_early(ring); }, ring_);
}

// The window is full: stages the used entries of the heads filled so far
// (published with the burst, as ever) and drops them from the window, so a
// burst of merged 64 KB frames (32 heads each) goes on instead of waiting
// for the next turn. False when no head was filled.
bool NetRxQueue::make_room() {
    if (window_.first_unlent() == 0) {
        return false;
    }
    std::visit([&](auto& ring) { window_.keep_unlent(ring, config_.log); }, ring_);
    return true;
}

// What the guest still has posted: in its ring, and popped into the window
// but not filled (kept there from one burst to the next).
template <typename R>
uint16_t NetRxQueue::posted_left(R& ring) const {
    return static_cast<uint16_t>(ring.posted() + window_.unlent_heads());
}

bool NetRxQueue::grow_window(uint32_t need_bytes) {
    // Without MRG_RXBUF any unlent head takes the packet (a too-small one
    // is counted at commit), so no bytes are counted at all.
    uint64_t have =
        config_.mergeable ? window_.unlent_bytes(window_.first_unlent(), need_bytes) : 0;
    auto covered = [&] { return config_.mergeable ? have >= need_bytes : window_.has_unlent(); };
    while (!covered()) {
        if (window_.full() && !make_room()) {
            return false;  // unlent heads fill the window: no packet is that big
        }
        const uint16_t before = window_.size();
        if (!std::visit([&](auto& ring) { return refill_window(ring); }, ring_)) {
            return false;
        }
        if (window_.size() == before) {
            // Nothing came: the guest has not posted enough buffers (park),
            // or the next chain needs more iovecs than the window has left.
            return false;
        }
        if (config_.mergeable) {
            have += window_.unlent_bytes(before, need_bytes - have);
        }
    }
    return true;
}

// ---- per burst: one visit of the ring ------------------------------------------

// Pops up to kRefillChains more chains into the window. Returns false if
// the ring broke.
template <typename R>
bool NetRxQueue::refill_window(R& ring) {
    const auto want = std::min(window_.free_heads(), kRefillChains);
    std::array<PoppedChain, kRefillChains>& chains = popped_;
    std::array<RingPosition, kRefillChains + 1>& before = popped_before_;
    const BurstPop popped =
        ring.pop_burst(window_.free_iovecs(), std::span<PoppedChain>(chains.data(), want), before);
    // The first chain that cannot go into the window: a device-readable
    // one, or the one the pop refused.
    uint16_t added = 0;
    while (added < popped.count && chains[added].readable_segments == 0) {
        window_.add(chains[added], before[added]);
        ++added;
    }
    const bool readable = added < popped.count;
    const PopStatus s = popped.status;
    if (!readable && (s == PopStatus::ok || s == PopStatus::empty)) {
        if (added == 0 && s == PopStatus::empty) {
            starved_ = true;  // held frames must go out now: see should_hold_publish
        }
        return true;
    }
    if (!readable && s == PopStatus::too_many_segments && window_.holds_iovecs()) {
        return true;  // stays in the ring (pop left it there) for the next window
    }
    if (added != 0) {
        // Popped ahead of need: give it back (with any popped after it), and
        // break the ring only when a packet really needs this chain (the
        // next refill).
        ring.rewind(before[added]);
        return true;
    }
    // Kernel vhost handle_rx: a device-readable buffer on RX is invalid.
    fail(readable ? RingFault{"RX descriptor chain", "device-readable buffer in an RX chain"}
                  : pop_fault(false, s));
    return false;
}

bool NetRxQueue::flush() {
    if (!running_) {
        return false;
    }
    bool notify = false;
    std::visit(
        [&](auto& ring) {
            window_.keep_unlent(ring, config_.log);
            parked_avail_ = posted_left(ring);
            if (pending_used_ == 0) {
                return;
            }
            if (!should_hold_publish(ring, parked_avail_)) {
                notify = publish(ring);
            } else if (burst_packets_ != held_packets_) {
                // A turn that found nothing flushes too: count only the bursts
                // that brought frames, each one a publish the guest did not get.
                counters_->publishes_coalesced.add(1);
                held_packets_ = burst_packets_;
            }
        },
        ring_);
    starved_ = false;
    return notify;
}

// rx_frames is a minimum per publish, checked at the end of a burst: a burst
// is never split, since publishing mid-burst would only add notifies
// (publish_early is off while coalescing).
template <typename R>
bool NetRxQueue::should_hold_publish(const R& ring, uint16_t avail_left) {
    const Coalescing& c = coalescing_;
    // A guest refills its RX ring when it sees used entries: holding while
    // it has no buffers left would stall both sides until the deadline.
    if (starved_ || avail_left == 0) {
        return false;
    }
    if (c.frames == 0) {
        return c.stream && should_hold_for_stream(ring);
    }
    if (burst_packets_ >= c.frames) {
        return false;
    }
    if (held_deadline_ == 0) {
        // One clock read per coalesced publish, not per packet.
        held_deadline_ = c.usecs == 0 ? kHeldUntilRoundEnd : now_ns_() + uint64_t{c.usecs} * 1000;
    }
    return true;
}

// The adaptive default: one clock read per burst that brought frames. Only
// a guest that would be woken is held for: one that is awake (its calls off
// or its used_event behind, as while a NAPI poll or a PMD runs) is shown the
// frames at once, since holding them would only make it wait.
template <typename R>
bool NetRxQueue::should_hold_for_stream(const R& ring) {
    const uint64_t now = now_ns_();
    const uint16_t budget = static_cast<uint16_t>(ring.size() - ring.size() / 4);
    const uint64_t due =
        ring.wants_call(pending_used_) ? pacer_.hold_until(now, pending_used_, budget) : 0;
    if (due == 0) {
        flush_now_ns_ = now;
        return false;
    }
    held_deadline_ = due;
    held_by_stream_ = true;
    return true;
}

template <typename R>
bool NetRxQueue::publish(R& ring) {
    window_.stage_used(ring, config_.log);  // heads filled since the last flush
    ring.publish_used();
    if (config_.log.active()) [[unlikely]] {
        config_.log.mark_ring();
    }
    pending_used_ = 0;
    bool notify = false;
    if (should_defer_call(ring)) {
        if (call_deadline_ == 0) {
            call_deadline_ = now_ns_() + kMaxCallDeferNs;  // one clock read per deferral
        }
    } else {
        // should_notify compares with the used index of the last call it
        // answered, so a deferred call is covered by this one.
        notify = config_.calls_wanted && ring.should_notify();
        call_deadline_ = 0;
    }
    // Counted when the guest can see them: a burst is one publish.
    counters_->count_burst(burst_packets_, burst_bytes_);
    if (coalescing_.stream) {
        pacer_.published(flush_now_ns_ != 0 ? flush_now_ns_ : now_ns_(), burst_packets_);
        flush_now_ns_ = 0;
    }
    burst_packets_ = 0;
    burst_bytes_ = 0;
    held_packets_ = 0;
    held_deadline_ = 0;
    held_by_stream_ = false;
    return notify;
}

// Stores used->idx for the heads filled so far, and nothing else: the call
// and the burst's counts stay with the flush, whose should_notify covers
// every index published since the last call (split: vring_need_event
// against the last signalled index; packed: the slots since then). So a
// polling guest sees frames sooner and a sleeping one is woken exactly as
// before. pending_used_ stays set, so the flush still publishes and calls.
template <typename R>
void NetRxQueue::publish_early(R& ring) {
    window_.stage_used(ring, config_.log);
    ring.publish_used();
    if (config_.log.active()) [[unlikely]] {
        config_.log.mark_ring();
    }
}

template <typename R>
bool NetRxQueue::should_defer_call(const R& ring) const {
    if constexpr (R::kExactPostedCount) {
        // parked_avail_ is what the guest still has posted after this burst:
        // with an eighth of its ring or less left it must run soon, or the
        // next bursts find no room.
        return coalescing_.adaptive_calls && config_.calls_wanted && !starved_ &&
               parked_avail_ > ring.size() / kCallMarginDivisor;
    } else {
        return false;
    }
}

bool NetRxQueue::set_adaptive_calls(bool on) {
    coalescing_.adaptive_calls = on;
    return !on && take_deferred_call();
}

bool NetRxQueue::take_deferred_call() {
    if (call_deadline_ == 0) {
        return false;
    }
    call_deadline_ = 0;
    if (!running_ || !config_.calls_wanted) {
        return false;
    }
    return std::visit([](auto& ring) { return ring.should_notify(); }, ring_);
}

bool NetRxQueue::set_coalescing(uint32_t frames, uint32_t usecs, bool stream) {
    // More frames than a ring holds could never be pending: the count is a
    // u16 (config validation keeps it far lower anyway).
    coalescing_ =
        Coalescing{std::min(frames, kMaxQueueSize), usecs, coalescing_.adaptive_calls, stream};
    pacer_.reset();
    // Turned off: nothing may stay held without a deadline.
    return frames == 0 && publish_held();
}

bool NetRxQueue::publish_stream_held() {
    return held_by_stream_ && publish_held();
}

bool NetRxQueue::publish_held() {
    if (!running_ || pending_used_ == 0) {
        return false;
    }
    return std::visit([&](auto& ring) { return publish(ring); }, ring_);
}

bool NetRxQueue::arm_kicks() {
    if (!running_) {
        return true;
    }
    kicks_enabled_ = true;
    const bool may_sleep = std::visit(
        [&](auto& ring) {
            const bool new_work = ring.enable_notifications();
            if constexpr (std::remove_reference_t<decltype(ring)>::kExactPostedCount) {
                // Compare with what was there when the path parked, not with our
                // own (rewound) index: otherwise buffers we gave back look new and
                // the path never sleeps (the 2026 vhost_net handle_rx livelock).
                return posted_left(ring) <= parked_avail_;
            } else {
                // enable_notifications already ignores given-back chains.
                return !new_work;
            }
        },
        ring_);
    if (config_.log.active()) [[unlikely]] {
        config_.log.mark_ring();  // the flags or event area just written
    }
    return may_sleep;
}

// ---- stop ------------------------------------------------------------------------

bool NetRxQueue::finish() {
    return std::visit(
        [&](auto& ring) {
            window_.give_back(ring, config_.log);
            // Frames held for rx_frames / rx_usecs: published before the ring
            // stops; a restart begins at the guest's used index and would
            // reuse their buffers.
            bool notify = pending_used_ != 0 && publish(ring);
            if (call_deadline_ != 0) {
                // The ring stops: no later round would make the deferred call.
                call_deadline_ = 0;
                notify = (config_.calls_wanted && ring.should_notify()) || notify;
            }
            if (config_.log.active()) [[unlikely]] {
                config_.log.mark_ring();  // the ring as we leave it, whatever wrote it last
            }
            return notify;
        },
        ring_);
}

void NetRxQueue::abandon() {
    call_deadline_ = 0;
    if (burst_packets_ != 0) {
        counters_->count_drop(DropReason::no_destination, burst_packets_);
        burst_packets_ = 0;
        burst_bytes_ = 0;
        held_packets_ = 0;
        held_deadline_ = 0;
    }
}

uint32_t NetRxQueue::vring_base() const {
    return std::visit([](const auto& ring) { return ring.vring_base(); }, ring_);
}

uint16_t NetRxQueue::deliver_burst(const packet::PacketBurst& burst,
                                   OffloadAdaptation& adaptation) {
    // deliver_adapted through a local type: its instance then has no
    // linkage and, called once, is inlined into this loop. Instantiated on
    // NetRxQueue itself it is a shared out-of-line function, and the call
    // with its returned struct cost ~37 instructions per 64 B frame on the
    // switch path (tools/bench/switch-callgrind.sh).
    struct Lender {
        NetRxQueue& queue;
        bool next_buffer(uint32_t max_packet, std::span<const iovec>* out) {
            return queue.next_buffer(max_packet, out);
        }
        // next_buffer lent a buffer on a running ring just before; the
        // adaptation wrote the header, num_buffers = 1 in it (NetRxQueue
        // writes the real count only when the packet spans more heads).
        // Inline (GCC kept it a call of its own, ~10 instructions a frame).
        [[gnu::always_inline]] void commit_buffer(uint32_t len) { queue.commit_lent(len, true); }
    } lender{*this};
    uint16_t sent = 0;
    while (sent < burst.count) {
        const packet::BurstPacket& p = burst.packets[sent];
        const std::span<const iovec> packet = burst.packet_iovecs(sent);
        adaptation.plan(packet, p.len, burst.header_size);
        // The common packet (plain, whole, nothing of it delivered yet)
        // straight to its buffer: the general path's checks of the plan
        // (drop, resume, GSO) and of the partial delivery are all known
        // answers for it (~10 instructions a 64 B frame on the switch path).
        if (adaptation.planned_plain() && partial_.next_segment == 0) [[likely]] {
            std::span<const iovec> buffer;
            if (!next_buffer(adaptation.whole_len(), &buffer)) {
                break;  // out of buffers, or the ring broke: retried from here
            }
            commit_lent(adaptation.write_whole(packet, buffer), true);
            ++sent;
            continue;
        }
        const uint16_t first = partial_.is(burst, sent) ? partial_.next_segment : 0;
        const AdaptedDelivery d = deliver_adapted(adaptation, lender, packet, first);
        if (!d.finished) {
            // Out of buffers (or the ring broke): the caller retries from here.
            partial_ =
                d.next_segment == 0
                    ? PartialDelivery{}
                    : PartialDelivery{packet::PacketIdentity::of(burst, sent), d.next_segment};
            break;
        }
        partial_ = PartialDelivery{};
        if (d.dropped) {
            counters_->count_drop(d.drop_reason);
        }
        ++sent;
    }
    return sent;
}

}  // namespace vnet::virtio
