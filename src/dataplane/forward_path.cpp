#include "dataplane/forward_path.hpp"

#include <algorithm>

namespace vnet::dataplane {

namespace {

// A source that can hand out packets in its own memory is pushed; one that
// needs buffers is filled. Taps and null ports only fill.
ForwardPath::Style style_for(const ports::Port& source) {
    return source.kind() == ports::PortKind::vhost_user ? ForwardPath::Style::push
                                                        : ForwardPath::Style::fill;
}

}  // namespace

ForwardPath::ForwardPath(ports::Port& source, uint16_t source_queue, ports::Port& destination,
                         uint16_t destination_queue, const PathOptions& options)
    : source_(source),
      source_queue_(source_queue),
      destination_(destination),
      destination_queue_(destination_queue),
      options_(options),
      style_(style_for(source)) {
    options_.tx_batch = std::clamp<uint16_t>(options_.tx_batch, 1, ports::kMaxBurstPackets);
}

TurnResult ForwardPath::run_turn() {
    if (!source_.queue_ready(source_queue_) || !destination_.queue_ready(destination_queue_)) {
        return TurnResult{0, 0, PathWait::not_ready};
    }
    return style_ == Style::push ? push_turn() : fill_turn();
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
            if (source_.receive_burst(source_queue_, pending_, options_.tx_batch) == 0) {
                turn.wait = PathWait::source;
                return turn;
            }
        }
        uint16_t sent = destination_.transmit_burst(destination_queue_, pending_);
        for (uint16_t i = 0; i < sent; ++i) {
            turn.bytes += pending_.packets[i].len;
        }
        turn.packets += sent;
        source_.complete_burst(source_queue_, pending_, sent);
        pending_.pop_front(sent);
        if (pending_.count != 0) {
            turn.wait = PathWait::destination;
            return turn;
        }
    }
    return turn;
}

TurnResult ForwardPath::fill_turn() {
    TurnResult turn;
    const uint32_t max_packet = source_.max_packet_size();
    uint16_t in_burst = 0;
    while (turn.packets < options_.weight_packets && turn.bytes < options_.weight_bytes) {
        std::span<const iovec> buffer;
        if (!destination_.next_rx_buffer(destination_queue_, max_packet, &buffer)) {
            turn.wait = PathWait::destination;
            break;
        }
        int32_t len = source_.receive_one(source_queue_, buffer);
        if (len <= 0) {
            // Nothing to read (0) or a read error, which the source counted.
            turn.wait = PathWait::source;
            break;
        }
        destination_.commit_rx_buffer(destination_queue_, static_cast<uint32_t>(len));
        ++turn.packets;
        turn.bytes += static_cast<uint32_t>(len);
        if (++in_burst == options_.tx_batch) {
            destination_.flush_rx_buffers(destination_queue_);
            in_burst = 0;
        }
    }
    destination_.flush_rx_buffers(destination_queue_);
    return turn;
}

void ForwardPath::on_guest_fault(uintptr_t address) {
    pending_.clear();
    source_.on_guest_fault(source_queue_, address);
    destination_.on_guest_fault(destination_queue_, address);
}

ports::WaitSpec ForwardPath::wait_spec(PathWait wait) const {
    switch (wait) {
        case PathWait::source:
            return source_.receive_wait(source_queue_);
        case PathWait::destination:
            return destination_.transmit_wait(destination_queue_);
        case PathWait::none:
        case PathWait::not_ready:
            break;
    }
    return {};
}

}  // namespace vnet::dataplane
