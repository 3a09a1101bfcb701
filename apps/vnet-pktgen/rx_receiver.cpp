#include "rx_receiver.hpp"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "frontend/packet_builder.hpp"
#include "idle_waiter.hpp"
#include "packet/iovec.hpp"
#include "periodic_stats.hpp"
#include "run_control.hpp"
#include "virtio/net_header.hpp"

namespace vnet::pktgen {

using frontend::FrameVerdict;
using frontend::NetDriver;
using frontend::PacketBuilder;

template <frontend::DriverRing Ring>
RxReceiver<Ring>::RxReceiver(NetDriver& device, const PktgenOptions& options)
    : device_(device),
      ring_(device.template rx_ring<Ring>()),
      options_(options),
      mrg_rxbuf_(device.mrg_rxbuf()),
      completions_(ring_.size()),
      peer_(device.session().socket_fd()) {
    free_buffers_.reserve(ring_.size());
    for (uint32_t b = ring_.size(); b-- > 0;) {
        free_buffers_.push_back(static_cast<uint16_t>(b));
    }
}

template <frontend::DriverRing Ring>
void RxReceiver<Ring>::post_free_buffers() {
    if (free_buffers_.empty()) {
        return;
    }
    for (uint16_t b : free_buffers_) {
        const std::span<std::byte> buf = device_.rx_buffer(b);
        ring_.add_buffer(device_.gpa_of(buf.data()), static_cast<uint32_t>(buf.size()),
                         frontend::BufferAccess::device_writes, b);
    }
    free_buffers_.clear();
    ring_.publish();
    // A back end that ran out of buffers may be waiting for this kick.
    if (ring_.kick_needed()) {
        device_.kick(NetDriver::kRxQueue);
        ++counters_.kicks;
    }
}

template <frontend::DriverRing Ring>
uint16_t RxReceiver<Ring>::process_used() {
    frontend::UsedRingError error;
    const uint16_t n = ring_.reclaim(completions_, &error);
    for (uint16_t i = 0; i < n; ++i) {
        if (count_reached()) {
            // Taken from the ring after the last wanted packet: not counted.
            free_buffers_.push_back(static_cast<uint16_t>(completions_[i].cookie));
            continue;
        }
        take_buffer(completions_[i]);
    }
    if (error != frontend::UsedRingError::ok) {
        throw std::runtime_error(std::string("RX used ring: ") + frontend::to_string(error));
    }
    return n;
}

template <frontend::DriverRing Ring>
void RxReceiver<Ring>::take_buffer(const frontend::Completion& completion) {
    const auto id = static_cast<uint16_t>(completion.cookie);
    const std::span<const std::byte> buf = device_.rx_buffer(id);
    // virtio 1.2 §2.7.8: len is what the device wrote; more than the buffer
    // holds is a device bug, and we read no further than our buffer.
    uint32_t len = completion.len;
    if (len > buf.size()) {
        ++counters_.bad_buffers;
        len = static_cast<uint32_t>(buf.size());
    }
    if (buffers_missing_ == 0) {
        start_frame(id, buf.first(len));
        return;
    }
    piece_buffers_[piece_count_] = id;
    pieces_[piece_count_++] = iovec{const_cast<std::byte*>(buf.data()), len};
    if (--buffers_missing_ == 0) {
        finish_frame();
    }
}

template <frontend::DriverRing Ring>
void RxReceiver<Ring>::start_frame(uint16_t buffer, std::span<const std::byte> data) {
    if (data.size() < PacketBuilder::kNetHeaderLen) {
        ++counters_.bad_buffers;
        free_buffers_.push_back(buffer);
        return;
    }
    uint32_t buffers = 1;
    virtio::NetHeader hdr;
    std::memcpy(&hdr, data.data(), sizeof hdr);
    frame_partial_checksum_ = (hdr.flags & virtio::NetHeader::kFlagNeedsCsum) != 0;
    if (mrg_rxbuf_) {
        // virtio 1.2 §5.1.6.4: num_buffers >= 1, and the frame cannot span
        // more buffers than we could have given the device.
        buffers = hdr.num_buffers;
        if (buffers == 0 || buffers > kMaxBuffersPerFrame || buffers > ring_.size()) {
            ++counters_.bad_buffers;
            buffers = 1;
        }
    }
    piece_buffers_[0] = buffer;
    const std::span<const std::byte> frame = data.subspan(PacketBuilder::kNetHeaderLen);
    pieces_[0] = iovec{const_cast<std::byte*>(frame.data()), frame.size()};
    piece_count_ = 1;
    buffers_missing_ = buffers - 1;
    if (buffers_missing_ == 0) {
        finish_frame();
    }
}

template <frontend::DriverRing Ring>
void RxReceiver<Ring>::finish_frame() {
    const std::span<const frontend::FramePiece> pieces(pieces_.data(), piece_count_);
    const size_t frame_len = packet::total_length(pieces);
    ++counters_.packets;
    counters_.bytes += frame_len;
    count_verdict(verifier_.check(pieces, frame_partial_checksum_));
    for (uint32_t i = 0; i < piece_count_; ++i) {
        free_buffers_.push_back(piece_buffers_[i]);
    }
    piece_count_ = 0;
}

template <frontend::DriverRing Ring>
void RxReceiver<Ring>::count_verdict(const frontend::FrameCheck& check) {
    switch (check.verdict) {
        case FrameVerdict::ok:
            ++counters_.verified;
            break;
        case FrameVerdict::foreign:
            ++counters_.foreign;
            return;
        case FrameVerdict::bad_length:
            ++counters_.bad_length;
            break;
        case FrameVerdict::bad_ip_checksum:
            ++counters_.bad_ip_checksum;
            break;
        case FrameVerdict::bad_payload:
            ++counters_.bad_payload;
            break;
        case FrameVerdict::bad_l4_checksum:
            ++counters_.bad_l4_checksum;
            break;
    }
    if (check.continuation) {
        ++counters_.segments;  // its frame's first segment carried the sequence number
        return;
    }
    // A damaged frame of ours still arrived: it is bad, not lost.
    sequence_.record(check.seq);
}

template <frontend::DriverRing Ring>
RxCounters RxReceiver<Ring>::run() {
    const Clock::time_point start = Clock::now();
    const RunDeadline deadline(start, options_.duration_s);
    PeriodicStats stats("rx", options_.stats_interval_s, start);
    IdleWaiter<Ring> waiter(ring_, device_.call_fd(NetDriver::kRxQueue), options_.busy_poll_us);

    post_free_buffers();
    while (!count_reached() && !stop_requested()) {
        const Clock::time_point now = Clock::now();
        if (deadline.passed(now)) {
            break;
        }
        if (peer_.closed(now)) {
            std::fprintf(stderr, "vnet-pktgen: the back end closed the connection\n");
            break;
        }
        const uint16_t taken = process_used();
        post_free_buffers();
        stats.tick(now, counters_.packets, counters_.bytes,
                   counters_.bad_length + counters_.bad_ip_checksum + counters_.bad_payload +
                       counters_.bad_l4_checksum,
                   sequence_.missing());
        if (taken != 0) {
            waiter.worked();
        } else {
            counters_.wakeups += waiter.idle(now) ? 1 : 0;
        }
    }
    // Stopped from outside: what the back end already delivered counts. A
    // back end that keeps sending would keep this going, hence the bound.
    for (int pass = 0; pass < 64 && !count_reached() && ring_.used_pending() != 0; ++pass) {
        process_used();
        post_free_buffers();
    }

    counters_.bad = counters_.bad_length + counters_.bad_ip_checksum + counters_.bad_payload +
                    counters_.bad_l4_checksum + counters_.bad_buffers;
    counters_.lost = sequence_.missing();
    counters_.reordered = sequence_.reordered();
    return counters_;
}

template class RxReceiver<frontend::DriverSplitRing>;
template class RxReceiver<frontend::DriverPackedRing>;

}  // namespace vnet::pktgen
