// VxlanSendBatch: the send half of the user-space VXLAN datapath. It turns
// a burst of inner frames into the messages of one sendmmsg per UDP socket
// (lane, below; vxlan_socket.hpp), each frame behind a VXLAN header, with no copy: a
// message's iovecs are [VXLAN header][frame's bytes after its virtio-net
// header][VXLAN header][next frame's bytes]..., pointing into the source's
// memory, and the kernel copies each byte once.
//
// Why messages of many frames: a datagram costs the kernel ~3 us on its own
// but ~90 ns as one segment of a UDP_SEGMENT (GSO) send, which builds the
// datagrams once and segments them late. So frames to the same VTEP (and
// lane) of the same length share one message whose UDP_SEGMENT cmsg
// gives the segment size (VXLAN header + frame), within the kernel's rules
// for UDP GSO (net/ipv4/udp.c, udp_send_skb): at most 64 segments
// (UDP_MAX_SEGMENTS on older kernels), at most 65,000 payload bytes here
// (under 64 KiB, IP's limit, with room for the headers), and every segment
// of gso_size bytes but the last, which may be shorter. A message of one
// frame has no cmsg: an ordinary datagram.
//
// A frame joins the latest message of its VTEP and lane when it may (not
// only the last message): a burst that interleaves flows, or a flood that
// goes packet by packet to every VTEP, still makes one message per VTEP
// and lane. A flow's frames are one VTEP's and one lane's, so they keep
// their order; frames of different messages are not ordered, which is no
// reordering of any flow. The iovecs are laid out message by message when
// send() starts.
//
// Lanes: a frame goes out on one of the caller's UDP sockets, its lane
// (the port picks it by the inner flow's hash, so that each flow has a
// source port of its own: vxlan_flow_hash.hpp). A message holds frames of
// one VTEP and one lane; send() hands each run of consecutive messages of
// one lane to that lane's socket in one sendmmsg, so a burst of one flow to
// one VTEP is still one call, and a burst of flows of several lanes one
// call per run of a lane's messages.
//
// Use, per burst (one worker; nothing allocates):
//   batch.begin(vteps);                      // the caller's VTEP table
//   for each frame: batch.add_frame(iovecs, header_size, vtep_index, lane)
//   batch.send(lane_fds)                     // again later if not all done
// A frame whose virtio-net header asks for GSO or a checksum (NEEDS_CSUM)
// is not planned: add_frame says so, and the caller segments it or
// completes its checksum first, then adds the result as plain frames.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "packet/packet_burst.hpp"
#include "packet/queue_counters.hpp"
#include "ports/vxlan/vxlan_wire.hpp"

namespace vnet::ports {

// The kernel's limits on one UDP_SEGMENT send that this batch keeps to.
inline constexpr uint16_t kVxlanMaxSegmentsPerMessage = 64;
inline constexpr uint32_t kVxlanMaxMessagePayload = 65000;
// The largest inner frame (virtio-net header excluded) one datagram carries.
inline constexpr uint32_t kVxlanMaxInnerFrame = kVxlanMaxMessagePayload - kVxlanHeaderSize;
// The most sockets (source ports) one batch sends on.
inline constexpr uint16_t kVxlanMaxSendLanes = 64;

enum class VxlanFrameVerdict : uint8_t {
    planned,        // part of a message; send() sends or drops it
    needs_offload,  // GSO or NEEDS_CSUM: the caller segments / checksums it first
    batch_full,     // no frame or iovec slot left: send, begin again, add it then
    // Dropped and counted here: the caller completes the frame.
    dropped_too_short,   // no Ethernet header after the virtio-net header
    dropped_too_big,     // more than kVxlanMaxInnerFrame bytes
    dropped_no_vtep,     // outside the table given to begin(), or neither IPv4 nor IPv6
    dropped_bad_chunks,  // more iovecs than a message takes
};

// Counted by the worker that owns the batch, read by any thread.
struct VxlanSendCounters {
    packet::Counter frames_sent;
    packet::Counter messages_sent;
    packet::Counter gso_messages_sent;  // messages of more than one segment
    packet::Counter sendmmsg_calls;
    packet::Counter dropped_too_short;
    packet::Counter dropped_too_big;
    packet::Counter dropped_no_vtep;
    packet::Counter dropped_bad_chunks;
    // Frames of a message the kernel refused for good, by errno:
    // EMSGSIZE; EINVAL (udp_send_skb: a segment over the path MTU, and
    // also an address of the socket's other family: the table is checked
    // at set-up, so EINVAL here means the MTU)
    packet::Counter dropped_message_too_big;
    packet::Counter dropped_unreachable;  // ENETUNREACH, EHOSTUNREACH, ECONNREFUSED...
    packet::Counter dropped_send_error;   // any other errno, or a lane with no socket
};

struct VxlanSendCounterField {
    std::string_view name;
    packet::Counter VxlanSendCounters::*counter;
};
inline constexpr std::array<VxlanSendCounterField, 11> kVxlanSendCounterFields = {{
    {"frames_sent", &VxlanSendCounters::frames_sent},
    {"messages_sent", &VxlanSendCounters::messages_sent},
    {"gso_messages_sent", &VxlanSendCounters::gso_messages_sent},
    {"sendmmsg_calls", &VxlanSendCounters::sendmmsg_calls},
    {"dropped_too_short", &VxlanSendCounters::dropped_too_short},
    {"dropped_too_big", &VxlanSendCounters::dropped_too_big},
    {"dropped_no_vtep", &VxlanSendCounters::dropped_no_vtep},
    {"dropped_bad_chunks", &VxlanSendCounters::dropped_bad_chunks},
    {"dropped_message_too_big", &VxlanSendCounters::dropped_message_too_big},
    {"dropped_unreachable", &VxlanSendCounters::dropped_unreachable},
    {"dropped_send_error", &VxlanSendCounters::dropped_send_error},
}};

// What one send() did. The frames are those planned, in the order they
// were added: the first `frames_done` (after those of earlier send()s) are
// finished (sent, or dropped and counted), the rest wait for the next
// send(). Messages go whole and in the order they were started, so when
// the send stops early some frames after the first unfinished one may have
// gone already (in a message started before it): frames_sent counts them,
// frames_done does not, and a caller that adds them again sends them twice.
struct VxlanSendResult {
    uint16_t frames_done = 0;
    uint16_t frames_sent = 0;
    bool would_block = false;   // EAGAIN/ENOBUFS: wait for POLLOUT, then send() again
    uint16_t blocked_lane = 0;  // with would_block: the lane whose socket is full
};

class VxlanSendBatch {
public:
    explicit VxlanSendBatch(uint32_t vni);
    // Holds pointers into itself (the messages point at its iovecs).
    VxlanSendBatch(const VxlanSendBatch&) = delete;
    VxlanSendBatch& operator=(const VxlanSendBatch&) = delete;

    // Starts a new burst toward the VTEPs of `vteps` (AF_INET or AF_INET6
    // entries; the caller keeps the table alive and unchanged while it
    // adds frames). Forgets frames still unsent. A message keeps its own
    // copy of its VTEP's address, taken when its first frame is added, so
    // the table may change before the burst is sent: what was planned
    // goes where it was planned to.
    void begin(std::span<const sockaddr_storage> vteps);

    // Plans the frame `frame` (virtio-net header of `header_size` bytes
    // first, in any number of pieces) toward vteps[vtep], on socket
    // `lane` of those send() is given. Reads the virtio-net header's flags
    // and GSO type, never trusts the lengths.
    VxlanFrameVerdict add_frame(std::span<const iovec> frame, uint16_t header_size, uint16_t vtep,
                                uint16_t lane = 0);

    // Sends the planned messages not yet sent, in order, message i on
    // lane_fds[its lane]: one sendmmsg per run of consecutive messages of
    // one lane that the socket takes whole. A message the kernel refuses
    // for good (an errno other than EAGAIN/ENOBUFS/EINTR), or of a lane
    // past lane_fds, has its frames dropped and counted, and the next one
    // is tried. A full socket stops the send there, whichever lane the
    // messages after it are on: frames are done from the front.
    VxlanSendResult send(std::span<const int> lane_fds);
    // One socket, lane 0.
    VxlanSendResult send(int fd) { return send(std::span<const int>(&fd, 1)); }

    uint16_t frames_planned() const { return frames_planned_; }
    // Frames one more add_frame may plan before the batch is full (iovecs
    // allowing).
    uint16_t frames_free() const {
        return static_cast<uint16_t>(packet::kMaxBurstPackets - frames_planned_);
    }
    uint16_t messages_planned() const { return messages_planned_; }
    // Whether every planned frame is done (sent or dropped).
    bool sent_all() const { return next_message_ == messages_planned_; }

    // The plan, for tests and the port's traces: message i's header as
    // sendmmsg sees it (its iovecs laid out by send(); before, they are
    // where add_frame put them, right while its frames were consecutive),
    // its frame count and its segment size.
    const msghdr& message(uint16_t i) const { return messages_[i].msg_hdr; }
    uint16_t message_frames(uint16_t i) const { return plans_[i].frames; }
    uint16_t message_segment_size(uint16_t i) const { return plans_[i].segment_size; }
    uint16_t message_lane(uint16_t i) const { return plans_[i].lane; }

    const VxlanSendCounters& counters() const { return counters_; }

private:
    struct MessagePlan {
        uint16_t vtep = 0;
        uint16_t lane = 0;
        uint16_t frames = 0;
        uint16_t segment_size = 0;  // VXLAN header + the first frame
        uint32_t payload = 0;       // bytes, every segment
        uint16_t iovecs = 0;        // of all its frames
        bool closed = false;        // a shorter segment ended it
    };
    // Where frame f's iovecs are (in iovecs_, in the order added) and the
    // message it joined.
    struct FramePlan {
        uint16_t message = 0;
        uint16_t first_iovec = 0;
        uint16_t iovecs = 0;
    };
    // A message's destination, as sendmmsg reads it: either family.
    union VtepAddress {
        sockaddr_in in4;
        sockaddr_in6 in6;
    };
    // The cmsg of one message: a UDP_SEGMENT gso_size (u16).
    static constexpr size_t kControlSize = CMSG_SPACE(sizeof(uint16_t));
    struct alignas(cmsghdr) Control {
        std::array<uint8_t, kControlSize> bytes;
    };

    // The message a frame of `segment_size` to `vtep` on `lane` joins:
    // that VTEP's and lane's latest not yet handed to the kernel, if the
    // UDP GSO rules let it; else messages_planned_ (a new one).
    uint16_t message_to_join(uint16_t vtep, uint16_t lane, uint32_t segment_size) const;
    // Each message not yet sent gets its frames' iovecs in one piece of
    // laid_out_, in the order the frames were added.
    void lay_out();
    // The frames, from the front, whose messages are all done.
    uint16_t frames_finished() const;
    // The messages from next_message_ on that are of its lane: one sendmmsg.
    uint16_t run_length() const;
    void count_sent(uint16_t messages, VxlanSendResult& result);
    void finish_message(uint16_t i);
    void drop_message(uint16_t i, int error_number);
    static VxlanFrameVerdict drop_frame(packet::Counter& reason, VxlanFrameVerdict verdict);

    const VxlanHeader header_;
    std::span<const sockaddr_storage> vteps_;
    uint16_t frames_planned_ = 0;
    uint16_t messages_planned_ = 0;
    uint16_t iovecs_used_ = 0;
    uint16_t next_message_ = 0;     // the first not yet sent or dropped
    uint16_t frames_reported_ = 0;  // frames_done of the send()s so far
    // Some frame joined a message other than the last: the iovecs need
    // laying out (otherwise each message's are in one piece already).
    bool interleaved_ = false;
    std::array<MessagePlan, packet::kMaxBurstPackets> plans_{};
    std::array<FramePlan, packet::kMaxBurstPackets> frames_{};
    std::array<mmsghdr, packet::kMaxBurstPackets> messages_{};
    std::array<Control, packet::kMaxBurstPackets> controls_{};
    std::array<VtepAddress, packet::kMaxBurstPackets> addresses_{};
    std::array<iovec, packet::kMaxBurstIovecs> iovecs_{};
    std::array<iovec, packet::kMaxBurstIovecs> laid_out_{};
    VxlanSendCounters counters_;
};

}  // namespace vnet::ports
