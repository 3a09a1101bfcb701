#include "ports/vxlan/vxlan_receive_batch.hpp"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "packet/byte_order.hpp"
#include "packet/wire.hpp"

namespace vnet::ports {

VxlanReceiveBatch::VxlanReceiveBatch(uint32_t vni, uint16_t buffer_count) : vni_(vni) {
    if (buffer_count == 0 || buffer_count > 1024) {
        throw std::invalid_argument("VxlanReceiveBatch: buffer_count must be 1..1024");
    }
    memory_ = std::make_unique<uint8_t[]>(size_t{buffer_count} * kVxlanReceiveBufferSize);
    buffers_.resize(buffer_count);
    for (uint16_t b = 0; b < buffer_count; ++b) {
        buffers_[b].data = memory_.get() + size_t{b} * kVxlanReceiveBufferSize;
    }
    frames_.resize(size_t{buffer_count} * kVxlanMaxDatagramsPerMessage);
    messages_.resize(buffer_count);
    iovecs_.resize(buffer_count);
    controls_.resize(buffer_count);
    buffer_of_.resize(buffer_count);
}

uint16_t VxlanReceiveBatch::free_buffers() const {
    uint16_t n = 0;
    for (const Buffer& b : buffers_) {
        n = static_cast<uint16_t>(n + (b.frames_outstanding == 0 ? 1 : 0));
    }
    return n;
}

void VxlanReceiveBatch::take(uint32_t n) {
    n = std::min(n, ready_);
    taken_ += n;
    ready_ -= n;
}

void VxlanReceiveBatch::complete(uint32_t n) {
    n = std::min(n, taken_);
    for (uint32_t i = 0; i < n; ++i) {
        --buffers_[frames_[head_].buffer].frames_outstanding;
        head_ = (head_ + 1) % static_cast<uint32_t>(frames_.size());
    }
    taken_ -= n;
}

uint32_t VxlanReceiveBatch::receive(int fd) {
    // Every free buffer gets a message; the name, control and lengths are
    // reset each time, since the kernel writes back into them.
    unsigned count = 0;
    for (uint16_t b = 0; b < buffers_.size(); ++b) {
        Buffer& buffer = buffers_[b];
        if (buffer.frames_outstanding != 0) {
            continue;
        }
        iovecs_[count] = iovec{buffer.data, kVxlanReceiveBufferSize};
        msghdr& m = messages_[count].msg_hdr;
        m = msghdr{};
        m.msg_name = &buffer.source;
        m.msg_namelen = sizeof(buffer.source);
        m.msg_iov = &iovecs_[count];
        m.msg_iovlen = 1;
        m.msg_control = controls_[count].bytes.data();
        m.msg_controllen = controls_[count].bytes.size();
        buffer_of_[count] = b;
        ++count;
    }
    if (count == 0) {
        return 0;
    }
    counters_.recvmmsg_calls.add(1);
    const int received = ::recvmmsg(fd, messages_.data(), count, MSG_DONTWAIT, nullptr);
    if (received < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            counters_.receive_errors.add(1);
        }
        return 0;
    }
    uint32_t frames = 0;
    for (int k = 0; k < received; ++k) {
        msghdr& m = messages_[k].msg_hdr;
        std::optional<uint32_t> gso_size;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
                c->cmsg_len >= CMSG_LEN(sizeof(int))) {
                int value = 0;
                std::memcpy(&value, CMSG_DATA(c), sizeof(value));
                gso_size = static_cast<uint32_t>(value < 0 ? 0 : value);
            }
        }
        frames += accept_message(buffer_of_[k], messages_[k].msg_len, m.msg_flags, gso_size);
    }
    return frames;
}

uint32_t VxlanReceiveBatch::accept_message(uint16_t buffer, uint32_t length, int msg_flags,
                                           std::optional<uint32_t> gso_size) {
    counters_.messages_received.add(1);
    if ((msg_flags & MSG_TRUNC) != 0 || length > kVxlanReceiveBufferSize) {
        counters_.dropped_truncated.add(1);
        return 0;
    }
    if (length == 0) {
        counters_.dropped_too_short.add(1);  // an empty datagram
        return 0;
    }
    // Without the cmsg the message is one datagram.
    const uint32_t segment = gso_size.value_or(length);
    if (segment == 0 || segment > length) {
        counters_.dropped_bad_gso_size.add(1);
        return 0;
    }
    const uint32_t datagrams = (length + segment - 1) / segment;
    if (datagrams > kVxlanMaxDatagramsPerMessage) {
        counters_.dropped_too_many_segments.add(1);
        return 0;
    }
    if (datagrams > 1 && first_frame_overruns(buffers_[buffer].data, segment)) {
        counters_.dropped_tunnel_gso.add(1);
        return 0;
    }
    uint32_t accepted = 0;
    for (uint32_t i = 0; i < datagrams; ++i) {
        const uint32_t offset = i * segment;
        const uint32_t datagram = std::min(segment, length - offset);
        accepted += accept_datagram(buffer, offset, datagram) ? 1 : 0;
    }
    counters_.frames_received.add(accepted);
    return accepted;
}

// A datagram of a UDP_GRO train holds its whole frame; an IP packet that
// says it is longer than the datagram is the head of one GSO packet cut at
// its inner MSS (the kernel gives a tunnel GSO packet's gso_size). Plain
// IPv4 and IPv6 are read; anything else is taken as a train.
bool VxlanReceiveBatch::first_frame_overruns(const uint8_t* datagram, uint32_t segment) {
    constexpr uint32_t kL3 = kVxlanHeaderSize + packet::kEthHeaderLen;
    if (segment < kL3 + packet::kIpv6HeaderLen) {
        return false;
    }
    const uint8_t* frame = datagram + kVxlanHeaderSize;
    const uint8_t* ip = datagram + kL3;
    const uint16_t ethertype = packet::load_be16(frame + packet::kEthTypeOffset);
    uint32_t l3_len = 0;
    if (ethertype == packet::kEtherTypeIpv4 && (ip[0] >> 4) == 4) {
        l3_len = packet::load_be16(ip + packet::kIpv4TotalLenOffset);
    } else if (ethertype == packet::kEtherTypeIpv6 && (ip[0] >> 4) == 6) {
        l3_len = packet::kIpv6HeaderLen + packet::load_be16(ip + packet::kIpv6PayloadLenOffset);
    }
    return kL3 + l3_len > segment;
}

bool VxlanReceiveBatch::accept_datagram(uint16_t buffer, uint32_t offset, uint32_t length) {
    const uint8_t* d = buffers_[buffer].data + offset;
    if (length < kVxlanHeaderSize + kVxlanMinInnerFrame) {
        counters_.dropped_too_short.add(1);
        return false;
    }
    if (!vxlan_vni_flag_set(d)) {
        counters_.dropped_no_vni_flag.add(1);
        return false;
    }
    if (vxlan_vni(d) != vni_) {
        counters_.dropped_wrong_vni.add(1);
        return false;
    }
    // The ring holds every buffer's most frames: never full here.
    const auto slot = (head_ + taken_ + ready_) % static_cast<uint32_t>(frames_.size());
    frames_[slot] = VxlanReceivedFrame{d + kVxlanHeaderSize,
                                       static_cast<uint32_t>(length - kVxlanHeaderSize), buffer};
    ++ready_;
    ++buffers_[buffer].frames_outstanding;
    return true;
}

}  // namespace vnet::ports
