#include "dataplane/forward_path.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/steady_clock.hpp"

namespace vnet::dataplane {

// Fill first: a reader feeding a lender puts each packet where it stays (a
// tap read lands straight in guest RX buffers), the one copy of the hop.
// Push otherwise: the destination writes or copies the source's packets in
// one submission per burst, and GRO can merge them. A tap lends no buffers,
// so a tap feeding a tap is pushed from its staging slots.
std::optional<ForwardPath::Style> ForwardPath::style_between(
    const ports::QueuePairCapabilities& source, const ports::QueuePairCapabilities& destination) {
    if (source.reader != nullptr && destination.buffer_lender != nullptr) {
        return Style::fill;
    }
    if (source.burst_source != nullptr && destination.burst_sink != nullptr) {
        return Style::push;
    }
    return std::nullopt;
}

namespace {

ForwardPath::Style checked_style(ports::Port& source, uint16_t source_queue,
                                 ports::Port& destination, uint16_t destination_queue) {
    std::optional<ForwardPath::Style> style = ForwardPath::style_between(
        source.capabilities(source_queue), destination.capabilities(destination_queue));
    if (!style) {
        throw std::invalid_argument("no path from " + source.name() + " to " + destination.name() +
                                    ": the source neither reads into lent buffers nor hands out "
                                    "bursts the destination takes");
    }
    return *style;
}

}  // namespace

ForwardPath::ForwardPath(ports::Port& source, uint16_t source_queue, ports::Port& destination,
                         uint16_t destination_queue, const ports::QueuePairOptions& options)
    : source_(source),
      source_queue_(source_queue),
      destination_(destination),
      destination_queue_(destination_queue),
      options_(options),
      style_(checked_style(source, source_queue, destination, destination_queue)) {
    const ports::QueuePairCapabilities from = source.capabilities(source_queue);
    const ports::QueuePairCapabilities to = destination.capabilities(destination_queue);
    if (style_ == Style::push) {
        burst_source_ = from.burst_source;
        burst_sink_ = to.burst_sink;
    } else {
        reader_ = from.reader;
        buffer_lender_ = to.buffer_lender;
    }
    rx_pacing_ = to.rx_pacing;
    options_.tx_batch = std::min<uint16_t>(options_.tx_batch, packet::kMaxBurstPackets);
    burst_size_ = std::max<uint16_t>(options_.tx_batch, 1);
    // Per-packet mode is the "no batching" baseline: no merging either.
    if (style_ == Style::push && options_.gro && options_.tx_batch > 1 &&
        burst_sink_->gso_header_size(destination_queue) != 0) {
        gro_ = std::make_unique<Gro>();
        gro_->options = gro::CoalesceOptions{.tcp = true, .udp = options_.gro_udp};
    }
    if (style_ == Style::push && !options_.tx_peek && options_.tx_batch > 1) {
        single_ = std::make_unique<packet::PacketBurst>();
    }
    if (style_ == Style::fill && options_.tx_batch > 1) {
        fill_batch_ = std::make_unique<FillBatch>();
    }
}

TurnResult ForwardPath::run_turn(uint64_t /*now_ns*/) {
    TurnResult turn{0, 0, PathWait::not_ready};
    if (source_.source_ready(source_queue_) && destination_.destination_ready(destination_queue_)) {
        turn = style_ == Style::push ? push_turn() : fill_turn();
    }
    last_wait_ = turn.wait;
    return turn;
}

TurnResult ForwardPath::push_turn() {
    TurnResult turn;
    uint32_t generation = source_.queue_generation(source_queue_);
    if (generation != pending_generation_) {
        // The source restarted (a guest reconnected): packets still held
        // from before point into buffers it already took back.
        pending_.clear();
        pending_generation_ = generation;
    }
    while (turn.packets < options_.weight_packets && turn.bytes < options_.weight_bytes) {
        if (pending_.count == 0) {
            if (!take_burst()) {
                turn.wait = PathWait::source;
                return turn;
            }
            // Policed packets are work done (ring entries handled): they
            // count towards the turn's weight, and a burst may go whole.
            turn.packets += police_pending();
            if (pending_.count == 0) {
                continue;
            }
        }
        uint16_t sent = transmit_pending();
        for (uint16_t i = 0; i < sent; ++i) {
            turn.bytes += pending_.packets[i].len;
        }
        turn.packets += sent;
        burst_source_->complete_burst(source_queue_, pending_, sent);
        pending_.pop_front(sent);
        if (pending_.count != 0) {
            turn.wait = PathWait::destination;
            return turn;
        }
    }
    return turn;
}

bool ForwardPath::take_burst() {
    if (burst_source_->receive_burst(source_queue_, pending_, burst_size_) == 0) {
        return false;
    }
    // The "more is coming" hint: while the ring still has packets (the
    // source re-reads its avail index), hold the batch and keep taking, so
    // one submission carries as much as the batch allows.
    while (options_.tx_peek && pending_.count < burst_size_) {
        uint16_t room = static_cast<uint16_t>(burst_size_ - pending_.count);
        if (burst_source_->receive_burst(source_queue_, pending_, room) == 0) {
            break;
        }
    }
    return true;
}

uint16_t ForwardPath::police_pending() {
    if (policer_ == nullptr || !policer_->enabled()) {
        return 0;
    }
    // One clock read per burst taken, only with policing on.
    const uint16_t dropped = policer_->police(pending_, steady_now_ns());
    if (dropped != 0) {
        burst_source_->complete_burst(source_queue_, pending_, dropped);
        source_.rx_counters(source_queue_).count_drop(packet::DropReason::policed, dropped);
        pending_.pop_front(dropped);
    }
    return dropped;
}

uint16_t ForwardPath::transmit_pending() {
    if (single_ != nullptr) {
        return transmit_one_by_one();
    }
    if (gro_ == nullptr || pending_.count < 2) {
        return burst_sink_->transmit_burst(destination_queue_, pending_);
    }
    Gro& g = *gro_;
    const auto header_size =
        static_cast<uint16_t>(burst_sink_->gso_header_size(destination_queue_));
    if (!gro::BurstCoalescer::may_merge(pending_, header_size, g.options)) {
        // The common small-packet burst (UDP, gro_udp off): nothing to merge,
        // so no header copies and no pass-through iovec copy either.
        return burst_sink_->transmit_burst(destination_queue_, pending_);
    }
    gro::CoalesceResult merged = g.coalescer.coalesce(pending_, header_size, g.options, g.merged);
    if (merged.merged_frames == 0) {
        return burst_sink_->transmit_burst(destination_queue_, pending_);
    }
    uint16_t frames = burst_sink_->transmit_burst(destination_queue_, g.merged);
    // Count the merged frames among those taken (a full tap takes a prefix).
    uint64_t merged_frames = 0;
    uint64_t segments = 0;
    uint16_t first = 0;
    for (uint16_t f = 0; f < frames; ++f) {
        uint16_t end = g.coalescer.source_packets(static_cast<uint16_t>(f + 1));
        if (end - first > 1) {
            ++merged_frames;
            segments += end - first;
        }
        first = end;
    }
    packet::QueueCounters& counters = destination_.tx_counters(destination_queue_);
    counters.gro_frames.add(merged_frames);
    counters.gro_segments.add(segments);
    return g.coalescer.source_packets(frames);
}

// tx_peek off: ring work stays batched, but each packet is submitted as
// soon as it is taken, so the destination never holds a batch (vhost_net's
// batching without MSG_MORE, which seed004 compares against).
uint16_t ForwardPath::transmit_one_by_one() {
    packet::PacketBurst& one = *single_;
    uint16_t sent = 0;
    while (sent < pending_.count) {
        one.clear();
        std::span<const iovec> iov = pending_.packet_iovecs(sent);
        std::copy(iov.begin(), iov.end(), one.free_iovecs().begin());
        const packet::BurstPacket& p = pending_.packets[sent];
        one.push(p.iov_count, p.len, p.token);
        if (burst_sink_->transmit_burst(destination_queue_, one) == 0) {
            break;
        }
        ++sent;
    }
    return sent;
}

TurnResult ForwardPath::fill_turn() {
    TurnResult turn;
    const uint32_t max_packet = reader_->max_packet_size();
    uint16_t in_burst = 0;
    while (turn.packets < options_.weight_packets && turn.bytes < options_.weight_bytes) {
        if (fill_batch_ != nullptr && fill_batch_->size > 1) {
            if (fill_batch(max_packet, turn, in_burst)) {
                if (turn.wait != PathWait::none) {
                    break;
                }
                continue;
            }
        }
        std::span<const iovec> buffer;
        if (!buffer_lender_->next_rx_buffer(destination_queue_, max_packet, &buffer)) {
            turn.wait = PathWait::destination;
            break;
        }
        int32_t len = reader_->receive_one(source_queue_, buffer);
        const bool first = turn.packets == 0;
        if (len <= 0) {
            // Nothing to read (0) or a read error, which the source counted.
            if (first) {
                lone_.stop_after_first(false);
            }
            turn.wait = PathWait::source;
            break;
        }
        buffer_lender_->commit_rx_buffer(destination_queue_, static_cast<uint32_t>(len));
        ++turn.packets;
        turn.bytes += static_cast<uint32_t>(len);
        if (first && lone_.stop_after_first(true)) {
            // Frames one at a time: this one to the guest now, not after
            // a read that would find nothing (io/lone_frames.hpp).
            turn.wait = PathWait::source;
            buffer_lender_->flush_rx_buffers(destination_queue_);
            return turn;
        }
        if (fill_batch_ != nullptr) {
            fill_batch_->size = 2;  // a packet came: try a batch next
        }
        if (++in_burst == burst_size_) {
            buffer_lender_->flush_rx_buffers(destination_queue_);
            in_burst = 0;
        }
    }
    lone_.round_ended(turn.packets, turn.wait == PathWait::source);
    buffer_lender_->flush_rx_buffers(destination_queue_);
    return turn;
}

bool ForwardPath::fill_batch(uint32_t max_packet, TurnResult& turn, uint16_t& in_burst) {
    FillBatch& b = *fill_batch_;
    // A batch never spans a flush: the burst's publish stays where it was.
    const auto want = std::min<uint16_t>(b.size, static_cast<uint16_t>(burst_size_ - in_burst));
    b.buffers.clear();
    const uint16_t lent =
        buffer_lender_->lend_rx_buffers(destination_queue_, max_packet, want, b.buffers);
    if (lent == 0) {
        return false;
    }
    const uint16_t got =
        reader_->receive_many(source_queue_, b.buffers, std::span<int>(b.lengths.data(), lent));
    buffer_lender_->commit_rx_buffers(destination_queue_,
                                      std::span<const int>(b.lengths.data(), got));
    turn.packets += got;
    for (uint16_t i = 0; i < got; ++i) {
        turn.bytes += static_cast<uint32_t>(b.lengths[i]);
    }
    in_burst = static_cast<uint16_t>(in_burst + got);
    if (in_burst == burst_size_) {
        buffer_lender_->flush_rx_buffers(destination_queue_);
        in_burst = 0;
    }
    if (got < lent) {
        // The source ran dry: the next batch asks for what this one found.
        b.size = std::max<uint16_t>(got, 1);
        turn.wait = PathWait::source;
    } else if (lent == want) {
        b.size = std::min<uint16_t>(static_cast<uint16_t>(b.size * 2), burst_size_);
    }
    return true;
}

void ForwardPath::on_guest_fault(uintptr_t address) {
    last_wait_ = PathWait::not_ready;
    pending_.clear();
    if (gro_ != nullptr) {
        gro_->merged.clear();
    }
    source_.on_guest_fault(source_queue_, address);
    destination_.on_guest_fault(destination_queue_, address);
}

void ForwardPath::abandon_pending() {
    if (pending_.count != 0 && burst_source_ != nullptr &&
        source_.queue_generation(source_queue_) == pending_generation_ &&
        source_.source_ready(source_queue_)) {
        source_.rx_counters(source_queue_)
            .count_drop(packet::DropReason::no_destination, pending_.count);
        burst_source_->complete_burst(source_queue_, pending_, pending_.count);
    }
    pending_.clear();
    if (gro_ != nullptr) {
        gro_->merged.clear();
    }
}

ports::WaitSpec ForwardPath::wait_spec(PathWait wait) const {
    switch (wait) {
        case PathWait::source:
            return source_.receive_wait(source_queue_);
        case PathWait::destination:
            return destination_.transmit_wait(destination_queue_);
        case PathWait::none:
        case PathWait::not_ready:
        case PathWait::holding:
            break;
    }
    return {};
}

bool ForwardPath::prepare_sleep(const Want& want) {
    if (last_wait_ == PathWait::none) {
        return false;  // it ran out of budget, not of work
    }
    // Arming turns the guest's kicks back on and re-checks its ring: false
    // means it queued more meanwhile, so look again instead.
    if (last_wait_ == PathWait::source && !source_.arm_receive_wait(source_queue_)) {
        return false;
    }
    if (last_wait_ == PathWait::destination &&
        !destination_.arm_transmit_wait(destination_queue_)) {
        return false;
    }
    want(wait_spec(last_wait_));  // nothing to wait on when not ready
    return true;
}

void ForwardPath::configure_destinations() {
    if (rx_pacing_ != nullptr) {
        rx_pacing_->set_rx_coalescing(destination_queue_, options_.rx_frames, options_.rx_usecs,
                                      options_.adaptive_rx);
    }
}

uint64_t ForwardPath::held_rx_deadline() const {
    // Port-local state only: no guest memory is read here.
    return rx_pacing_ != nullptr ? rx_pacing_->rx_held_deadline(destination_queue_) : 0;
}

void ForwardPath::publish_held_rx() {
    if (rx_pacing_ != nullptr) {
        rx_pacing_->publish_held_rx(destination_queue_);
    }
}

void ForwardPath::publish_rx_before_sleep() {
    if (rx_pacing_ != nullptr) {
        rx_pacing_->publish_rx_before_sleep(destination_queue_);
    }
}

}  // namespace vnet::dataplane
