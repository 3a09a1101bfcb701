// VxlanReceiveBatch: the receive half of the user-space VXLAN datapath.
// One recvmmsg (MSG_DONTWAIT) fills its free 64 KiB buffers, each with one
// message: with UDP_GRO on (vxlan_socket.hpp) the kernel merges a flow's
// datagrams of equal size into one message and says their size in a UDP_GRO
// cmsg, so a burst of 64 VXLAN frames from one peer is one message, read
// with one copy. The batch splits each message back into its datagrams and
// hands out the inner frames where they lie (no copy), with the address
// they came from (the port learns MAC -> VTEP from it).
//
// Every datagram is hostile input from the network: one shorter than a
// VXLAN header and an Ethernet header, without the I flag, or of another
// VNI is dropped and counted by reason; a message whose gso_size does not
// fit it, or whose first frame says it is longer than gso_size (one GSO
// packet, not a train), is dropped whole. Nothing is logged per packet.
//
// Frames move through three states, in order:
//   ready     received, not yet handed out     ready(), ready_frame(i)
//   taken     handed out (a port's burst)      take(n)
//   done      the taker is finished with them  complete(n)
// A buffer is read into again once all of its frames are done, so a port
// that hands frames out as a BurstSource completes them in order
// (complete_burst) and the buffers come back by themselves.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "packet/queue_counters.hpp"
#include "ports/vxlan/vxlan_wire.hpp"

namespace vnet::ports {

// One message's room: a UDP datagram's payload, or a GRO'd run of them
// (the kernel keeps a merged skb under 64 KiB).
inline constexpr uint32_t kVxlanReceiveBufferSize = 64 * 1024;
// The most datagrams one message may split into: UDP GRO merges at most 64
// (UDP_GRO_CNT_MAX); a local UDP_SEGMENT sender's skb reaches a GRO socket
// unsplit with up to 128 (UDP_MAX_SEGMENTS). A message claiming more is
// dropped, which bounds the frames a buffer holds.
inline constexpr uint32_t kVxlanMaxDatagramsPerMessage = 128;

struct VxlanReceivedFrame {
    const uint8_t* data = nullptr;  // the inner Ethernet frame, in a receive buffer
    uint32_t len = 0;
    uint16_t buffer = 0;  // which buffer (source(): who sent it)
};

// Counted by the worker that owns the batch, read by any thread.
struct VxlanReceiveCounters {
    packet::Counter frames_received;  // inner frames handed out as ready
    packet::Counter messages_received;
    packet::Counter recvmmsg_calls;
    // Datagrams dropped:
    packet::Counter dropped_too_short;    // under VXLAN header + Ethernet header
    packet::Counter dropped_no_vni_flag;  // RFC 7348 §5: the I flag must be set
    packet::Counter dropped_wrong_vni;    // another VNI than this batch's
    // Messages dropped whole:
    packet::Counter dropped_bad_gso_size;       // UDP_GRO gso_size 0 or over the message
    packet::Counter dropped_too_many_segments;  // more than kVxlanMaxDatagramsPerMessage
    packet::Counter dropped_truncated;          // MSG_TRUNC: larger than a buffer
    // One packet bigger than its gso_size: a kernel sender's tunnel GSO
    // packet that a veth handed on whole (docs/USAGE.md), not a train of
    // datagrams; its first frame's IP length gives it away.
    packet::Counter dropped_tunnel_gso;
    packet::Counter receive_errors;  // recvmmsg failed (not EAGAIN)
};

struct VxlanReceiveCounterField {
    std::string_view name;
    packet::Counter VxlanReceiveCounters::*counter;
};
inline constexpr std::array<VxlanReceiveCounterField, 11> kVxlanReceiveCounterFields = {{
    {"frames_received", &VxlanReceiveCounters::frames_received},
    {"messages_received", &VxlanReceiveCounters::messages_received},
    {"recvmmsg_calls", &VxlanReceiveCounters::recvmmsg_calls},
    {"dropped_too_short", &VxlanReceiveCounters::dropped_too_short},
    {"dropped_no_vni_flag", &VxlanReceiveCounters::dropped_no_vni_flag},
    {"dropped_wrong_vni", &VxlanReceiveCounters::dropped_wrong_vni},
    {"dropped_bad_gso_size", &VxlanReceiveCounters::dropped_bad_gso_size},
    {"dropped_too_many_segments", &VxlanReceiveCounters::dropped_too_many_segments},
    {"dropped_truncated", &VxlanReceiveCounters::dropped_truncated},
    {"dropped_tunnel_gso", &VxlanReceiveCounters::dropped_tunnel_gso},
    {"receive_errors", &VxlanReceiveCounters::receive_errors},
}};

class VxlanReceiveBatch {
public:
    // Allocates `buffer_count` (1..1024) buffers of kVxlanReceiveBufferSize
    // now, and nothing after. Accepts only frames of `vni`.
    VxlanReceiveBatch(uint32_t vni, uint16_t buffer_count);
    VxlanReceiveBatch(const VxlanReceiveBatch&) = delete;
    VxlanReceiveBatch& operator=(const VxlanReceiveBatch&) = delete;

    // One recvmmsg into every free buffer. Returns how many frames it made
    // ready: 0 when nothing was queued, no buffer is free, or the read
    // failed (counted).
    uint32_t receive(int fd);

    uint32_t ready() const { return ready_; }
    // The i-th ready frame, oldest first (i < ready()).
    const VxlanReceivedFrame& ready_frame(uint32_t i) const {
        return frames_[(head_ + taken_ + i) % frames_.size()];
    }
    // The oldest n ready frames are handed out (n <= ready()).
    void take(uint32_t n);
    // The oldest n taken frames are done; their buffers are free again
    // once all their frames are (n <= taken()).
    void complete(uint32_t n);
    uint32_t taken() const { return taken_; }

    // Who sent the message a frame came from (AF_INET or AF_INET6).
    const sockaddr_storage& source(const VxlanReceivedFrame& f) const {
        return buffers_[f.buffer].source;
    }
    uint16_t buffer_count() const { return static_cast<uint16_t>(buffers_.size()); }
    uint16_t free_buffers() const;

    // Splits the message of `length` bytes now in `buffer` (received with
    // `msg_flags`, and the UDP_GRO cmsg's gso_size if it had one) into
    // ready frames; returns how many. receive() calls it for each message;
    // tests call it with what a kernel would not send (writing the bytes
    // through buffer_data first).
    uint32_t accept_message(uint16_t buffer, uint32_t length, int msg_flags,
                            std::optional<uint32_t> gso_size);
    uint8_t* buffer_data(uint16_t buffer) { return buffers_[buffer].data; }

    const VxlanReceiveCounters& counters() const { return counters_; }

private:
    struct Buffer {
        uint8_t* data = nullptr;
        uint32_t frames_outstanding = 0;  // ready or taken, not yet done
        sockaddr_storage source{};
    };
    // The cmsg of one message: UDP_GRO's gso_size (an int, udp_cmsg_recv).
    static constexpr size_t kControlSize = CMSG_SPACE(sizeof(int));
    struct alignas(cmsghdr) Control {
        std::array<uint8_t, kControlSize> bytes;
    };

    bool accept_datagram(uint16_t buffer, uint32_t offset, uint32_t length);
    // Whether the first frame of a message cut at `segment` says it is
    // longer than its datagram (a GSO packet, not a train).
    static bool first_frame_overruns(const uint8_t* datagram, uint32_t segment);

    const uint32_t vni_;
    std::unique_ptr<uint8_t[]> memory_;
    std::vector<Buffer> buffers_;
    // A ring of every frame not yet done: taken ones from head_, then ready
    // ones. Room for every buffer's most frames, so it never overflows.
    std::vector<VxlanReceivedFrame> frames_;
    uint32_t head_ = 0;
    uint32_t taken_ = 0;
    uint32_t ready_ = 0;
    // One recvmmsg's messages: message k reads into buffer buffer_of_[k].
    std::vector<mmsghdr> messages_;
    std::vector<iovec> iovecs_;
    std::vector<Control> controls_;
    std::vector<uint16_t> buffer_of_;
    VxlanReceiveCounters counters_;
};

}  // namespace vnet::ports
