#include "ports/vxlan/vxlan_send_batch.hpp"

#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "packet/iovec.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {

VxlanSendBatch::VxlanSendBatch(uint32_t vni) : header_(make_vxlan_header(vni)) {}

void VxlanSendBatch::begin(std::span<const sockaddr_storage> vteps) {
    vteps_ = vteps;
    frames_planned_ = 0;
    messages_planned_ = 0;
    iovecs_used_ = 0;
    next_message_ = 0;
    frames_reported_ = 0;
    interleaved_ = false;
}

void VxlanSendBatch::lay_out() {
    if (!interleaved_) {
        return;  // each message's frames came one after another: in one piece
    }
    // Message m's iovecs start at start[m]: the messages in order, each
    // its frames' iovecs in the order added. Messages before next_message_
    // were copied by the kernel already and take no room.
    std::array<uint16_t, packet::kMaxBurstPackets> next{};
    uint16_t at = 0;
    for (uint16_t m = next_message_; m < messages_planned_; ++m) {
        next[m] = at;
        msghdr& h = messages_[m].msg_hdr;
        h.msg_iov = laid_out_.data() + at;
        h.msg_iovlen = plans_[m].iovecs;
        at = static_cast<uint16_t>(at + plans_[m].iovecs);
    }
    for (uint16_t f = 0; f < frames_planned_; ++f) {
        const FramePlan& frame = frames_[f];
        if (frame.message < next_message_) {
            continue;
        }
        std::copy_n(iovecs_.data() + frame.first_iovec, frame.iovecs,
                    laid_out_.data() + next[frame.message]);
        next[frame.message] = static_cast<uint16_t>(next[frame.message] + frame.iovecs);
    }
}

uint16_t VxlanSendBatch::frames_finished() const {
    uint16_t f = frames_reported_;
    while (f < frames_planned_ && frames_[f].message < next_message_) {
        ++f;
    }
    return f;
}

VxlanFrameVerdict VxlanSendBatch::drop_frame(packet::Counter& reason, VxlanFrameVerdict verdict) {
    reason.add(1);
    return verdict;
}

uint16_t VxlanSendBatch::message_to_join(uint16_t vtep, uint16_t lane,
                                         uint32_t segment_size) const {
    // Back from the last message to the first not handed to the kernel:
    // the latest of this VTEP and lane is the only one a frame may join
    // (an earlier one would put it before frames of its flow).
    for (uint16_t m = messages_planned_; m > next_message_;) {
        --m;
        const MessagePlan& plan = plans_[m];
        if (plan.vtep != vtep || plan.lane != lane) {
            continue;
        }
        // UDP GSO: every segment gso_size bytes but the last, which may be
        // shorter; so a shorter frame ends the message and a longer one
        // cannot join it.
        const bool fits = !plan.closed && plan.frames < kVxlanMaxSegmentsPerMessage &&
                          segment_size <= plan.segment_size &&
                          plan.payload + segment_size <= kVxlanMaxMessagePayload;
        return fits ? m : messages_planned_;
    }
    return messages_planned_;
}

VxlanFrameVerdict VxlanSendBatch::add_frame(std::span<const iovec> frame, uint16_t header_size,
                                            uint16_t vtep, uint16_t lane) {
    if (vtep >= vteps_.size() ||
        (vteps_[vtep].ss_family != AF_INET && vteps_[vtep].ss_family != AF_INET6)) {
        return drop_frame(counters_.dropped_no_vtep, VxlanFrameVerdict::dropped_no_vtep);
    }
    if (frames_planned_ == packet::kMaxBurstPackets) {
        return VxlanFrameVerdict::batch_full;
    }
    const size_t total = packet::total_length(frame);
    if (total < size_t{header_size} + kVxlanMinInnerFrame) {
        return drop_frame(counters_.dropped_too_short, VxlanFrameVerdict::dropped_too_short);
    }
    const size_t inner = total - header_size;
    if (inner > kVxlanMaxInnerFrame) {
        return drop_frame(counters_.dropped_too_big, VxlanFrameVerdict::dropped_too_big);
    }
    // The two bytes that say whether the frame is whole: a private copy,
    // since a hostile guest may split its header anywhere.
    uint8_t head[2] = {0, 0};
    const size_t head_size = std::min<size_t>(header_size, sizeof(head));
    packet::gather_prefix(frame, head, head_size);
    if (head_size == sizeof(head) &&
        ((head[virtio::kNetHeaderFlagsOffset] & virtio::NetHeader::kFlagNeedsCsum) != 0 ||
         head[virtio::kNetHeaderGsoTypeOffset] != virtio::NetHeader::kGsoNone)) {
        return VxlanFrameVerdict::needs_offload;
    }
    // One iovec for the VXLAN header, then the frame's bytes: never more
    // pieces than the frame has.
    if (frame.size() + 1 > packet::kMaxBurstIovecs) {
        return drop_frame(counters_.dropped_bad_chunks, VxlanFrameVerdict::dropped_bad_chunks);
    }
    const size_t room = size_t{packet::kMaxBurstIovecs} - iovecs_used_;
    if (frame.size() + 1 > room) {
        return VxlanFrameVerdict::batch_full;
    }
    iovec* out = iovecs_.data() + iovecs_used_;
    out[0] = iovec{const_cast<uint8_t*>(header_.data()), kVxlanHeaderSize};
    const int pieces = packet::slice_iovecs(frame, header_size, inner, {out + 1, room - 1});
    if (pieces < 0) {
        return drop_frame(counters_.dropped_bad_chunks, VxlanFrameVerdict::dropped_bad_chunks);
    }

    const auto segment_size = static_cast<uint32_t>(kVxlanHeaderSize + inner);
    const auto iovecs = static_cast<uint16_t>(pieces + 1);
    const uint16_t joined = message_to_join(vtep, lane, segment_size);
    if (joined == messages_planned_) {
        plans_[joined] = MessagePlan{
            .vtep = vtep, .lane = lane, .segment_size = static_cast<uint16_t>(segment_size)};
        msghdr& m = messages_[joined].msg_hdr;
        m = msghdr{};
        m.msg_iov = out;
        // The address as it is now: the caller's table may change before
        // this message is sent (a full socket), and it still goes here.
        const sockaddr_storage& address = vteps_[vtep];
        m.msg_namelen = address.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
        std::memcpy(&addresses_[joined], &address, m.msg_namelen);
        m.msg_name = &addresses_[joined];
        ++messages_planned_;
    } else if (joined != messages_planned_ - 1) {
        interleaved_ = true;
    }
    MessagePlan& plan = plans_[joined];
    ++plan.frames;
    plan.payload += segment_size;
    plan.iovecs = static_cast<uint16_t>(plan.iovecs + iovecs);
    plan.closed = segment_size < plan.segment_size;
    messages_[joined].msg_hdr.msg_iovlen = plan.iovecs;  // right while its frames are consecutive
    frames_[frames_planned_] = FramePlan{joined, iovecs_used_, iovecs};
    iovecs_used_ = static_cast<uint16_t>(iovecs_used_ + iovecs);
    ++frames_planned_;
    return VxlanFrameVerdict::planned;
}

// The UDP_SEGMENT cmsg when the message holds more than one datagram;
// done at send time, when the plan is final.
void VxlanSendBatch::finish_message(uint16_t i) {
    const MessagePlan& plan = plans_[i];
    msghdr& m = messages_[i].msg_hdr;
    if (plan.frames == 1) {
        m.msg_control = nullptr;
        m.msg_controllen = 0;
        return;
    }
    Control& c = controls_[i];
    m.msg_control = c.bytes.data();
    m.msg_controllen = c.bytes.size();
    cmsghdr* cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_UDP;
    cm->cmsg_type = UDP_SEGMENT;
    cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    const uint16_t gso_size = plan.segment_size;
    std::memcpy(CMSG_DATA(cm), &gso_size, sizeof(gso_size));
}

void VxlanSendBatch::drop_message(uint16_t i, int error_number) {
    switch (error_number) {
        case EMSGSIZE:
        case EINVAL:  // udp_send_skb: gso_size + headers over the path MTU
            counters_.dropped_message_too_big.add(plans_[i].frames);
            break;
        case ENETUNREACH:
        case EHOSTUNREACH:
        case ECONNREFUSED:
        case EADDRNOTAVAIL:
        case ENETDOWN:
        case EHOSTDOWN:
            counters_.dropped_unreachable.add(plans_[i].frames);
            break;
        default:
            counters_.dropped_send_error.add(plans_[i].frames);
            break;
    }
}

uint16_t VxlanSendBatch::run_length() const {
    const uint16_t lane = plans_[next_message_].lane;
    auto end = static_cast<uint16_t>(next_message_ + 1);
    while (end < messages_planned_ && plans_[end].lane == lane) {
        ++end;
    }
    return static_cast<uint16_t>(end - next_message_);
}

void VxlanSendBatch::count_sent(uint16_t messages, VxlanSendResult& result) {
    for (uint16_t k = 0; k < messages; ++k) {
        const MessagePlan& plan = plans_[next_message_ + k];
        result.frames_sent = static_cast<uint16_t>(result.frames_sent + plan.frames);
        counters_.frames_sent.add(plan.frames);
        counters_.gso_messages_sent.add(plan.frames > 1 ? 1 : 0);
    }
    counters_.messages_sent.add(messages);
    next_message_ = static_cast<uint16_t>(next_message_ + messages);
}

VxlanSendResult VxlanSendBatch::send(std::span<const int> lane_fds) {
    VxlanSendResult result;
    lay_out();
    for (uint16_t i = next_message_; i < messages_planned_; ++i) {
        finish_message(i);
    }
    while (next_message_ < messages_planned_) {
        const uint16_t lane = plans_[next_message_].lane;
        int error_number = EBADF;  // a lane with no socket: its messages are dropped
        if (lane < lane_fds.size()) {
            const uint16_t run = run_length();
            counters_.sendmmsg_calls.add(1);
            const int sent =
                ::sendmmsg(lane_fds[lane], messages_.data() + next_message_, run, MSG_DONTWAIT);
            if (sent > 0) {
                // Whole messages: a partial count means the kernel stopped
                // at the next one (full, or an error it reports on the next
                // call).
                count_sent(static_cast<uint16_t>(sent), result);
                continue;
            }
            error_number = sent == 0 ? EAGAIN : errno;
        }
        if (error_number == EINTR) {
            continue;
        }
        if (error_number == EAGAIN || error_number == EWOULDBLOCK || error_number == ENOBUFS) {
            result.would_block = true;
            result.blocked_lane = lane;
            break;
        }
        drop_message(next_message_, error_number);
        ++next_message_;
    }
    const uint16_t finished = frames_finished();
    result.frames_done = static_cast<uint16_t>(finished - frames_reported_);
    frames_reported_ = finished;
    return result;
}

}  // namespace vnet::ports
