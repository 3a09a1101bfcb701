// VxlanSocketPort: a switch's VXLAN uplink done in user space, on one UDP
// socket (the `socket` datapath of a vxlan port; the `splice` datapath is
// VxlanUplink's kernel device and tap). Why: the kernel's VXLAN path costs
// ~3.7 us of CPU per frame, a UDP_SEGMENT send received with UDP_GRO ~0.1
// us (docs/BENCHMARKS.md, `vxlan/vnet-underlay-limit.sh`), so a burst to
// one VTEP should be one send and one receive.
//
// One queue pair, both roles of a switch member:
//  * burst sink: each frame of a burst goes behind a VXLAN header to the
//    VTEP its destination MAC was learned behind, or, for broadcast,
//    multicast and unknown unicast, to every peer (head-end replication,
//    as the kernel's all-zero FDB entries do); consecutive frames to one
//    VTEP of one length leave as one UDP_SEGMENT message, all of a burst in
//    one sendmmsg (VxlanSendBatch), straight from the source's memory. A
//    GSO frame is segmented, and a partial checksum completed, here
//    (virtio::OffloadAdaptation toward a receiver with no offloads) into
//    the port's own scratch, then sent the same way: the segments of one
//    frame are of one length, so they too are one message.
//  * burst source: one recvmmsg takes what the peers sent, a peer's burst
//    one UDP_GRO message (VxlanReceiveBatch); the inner frames are handed
//    out where they lie, behind a shared virtio-net header that asks for
//    no offload (the checksums were complete on the wire), and each
//    frame's source MAC is learned behind the VTEP it came from, if that
//    is a peer. A TCP segment whose checksum verifies says so (DATA_VALID),
//    and consecutive segments of one flow are merged into one GSO frame
//    (gro::BurstCoalescer, zero copy: a header of the coalescer's and
//    slices of the segments), so a TCP stream a sender's TSO cut into 45
//    segments reaches a pod's tap as one write and a TSO guest as one
//    frame, as it would through the kernel's vxlan device and its GRO.
//
// Learning (the default): a fixed table (kVxlanMaxLearnedMacs) of MAC ->
// peer, refreshed by every frame received, forgotten after kVxlanMacAgeNs
// without one (the kernel's default ageing, 300 s) or when its peer is
// removed; when full, an unknown MAC floods. Only peers are learned
// behind: a datagram from another address is delivered, but unicast back
// to its MAC floods to the peers, so a stranger cannot pull traffic away
// from them.
//
// Control-plane mode (EVPN: the sync's step 4, evpn_fdb_sync.hpp): from the first
// set_forwarding on, the port forwards by what a control plane gave it,
// as the kernel's vxlan device does by zebra's FDB entries: remote MACs
// each behind one VTEP (type-2 routes) and a flood list (type-3 routes,
// zebra's all-zero entries). It never learns again: EVPN's vxlan device is
// `nolearning` because a MAC's place is what BGP says, not where a frame
// last came from (a frame from a moved VM's old host would pull traffic
// back). Broadcast, multicast and unknown unicast go to the flood list
// only, a known MAC to its VTEP even when that VTEP is not on the flood
// list (a type-2 route may come before the type-3). Its MACs live in the
// learning table, pinned (never aged, never replaced); one the table has
// no room for floods, and is counted. Static peers do not mix with it:
// set_forwarding replaces them, add_peer/remove_peer are refused after it.
//
// Send lanes (RFC 7348 §5's source port entropy): the port sends from
// `source_ports` UDP sockets, lane 0 the socket it receives on and the
// others send-only sockets bound to the local address and a port the
// kernel picks (vxlan_socket.hpp: nothing is addressed to them). Each
// packet's lane is a hash of its inner flow (vxlan_flow_hash.hpp), taken
// once per packet, so every segment and every flood copy of it leaves from
// one source port and a flow is never reordered; an underlay that spreads
// by 5-tuple (ECMP, a receiving NIC's RSS) then spreads the flows, as it
// does the kernel vxlan device's. A full lane socket stops the send at
// its first message still to go (frames are done from the front, so the
// messages after it wait whatever their lane), transmit_wait() names that
// socket, and the next call sends the rest of that plan first (PendingSend
// below): a frame that went is never sent again.
//
// VTEP slots: every VTEP the port sends to (a peer, a flood VTEP, a remote
// MAC's VTEP) has a fixed slot, which the learning table and the send
// batch name; a slot either floods or is a unicast target only.
//
// Threads: the datapath calls come from the worker that owns the queue
// pair; add_peer/remove_peer/set_forwarding from the control thread, on
// that worker (PortContext::run_on_owner) once it runs the port. Nothing
// per packet allocates, locks or logs.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gro/burst_coalescer.hpp"
#include "packet/packet_burst.hpp"
#include "packet/packet_identity.hpp"
#include "packet/queue_counters.hpp"
#include "packet/wire.hpp"
#include "ports/port.hpp"
#include "ports/vxlan/udp_port_steering.hpp"
#include "ports/vxlan/vxlan_receive_batch.hpp"
#include "ports/vxlan/vxlan_send_batch.hpp"
#include "ports/vxlan/vxlan_socket.hpp"
#include "virtio/net/offload_adaptation.hpp"

namespace vnet::ports {

// The most remote VTEPs of one uplink: static peers, or in control-plane
// mode the flood list and the remote MACs' VTEPs together. An EVPN VNI
// spans every host that has a port in it, a few hundred in the fabrics
// EVPN serves, so room for a thousand (128 bytes of address each).
inline constexpr uint16_t kVxlanMaxVteps = 1024;
// MACs learned behind peers; beyond it, unknown MACs flood.
inline constexpr uint32_t kVxlanMaxLearnedMacs = 4096;
// The kernel's default FDB ageing (br_fdb, vxlan: 300 s).
inline constexpr uint64_t kVxlanMacAgeNs = 300ull * 1000 * 1000 * 1000;
// Receive buffers of 64 KiB: a peer's burst is one, so 16 hold 16 bursts.
inline constexpr uint16_t kVxlanReceiveBuffers = 16;
// Where GSO frames are cut and partial checksums completed before they
// are sent: at least one 64 KiB frame's segments with their headers.
inline constexpr uint32_t kVxlanScratchBytes = 256 * 1024;
// The pieces of one packet's segments sent by reference (a segment's
// headers and its payload's slices): a 64 KiB frame of 45 segments in
// guest buffers of any layout takes far fewer; more, and it is copied.
inline constexpr uint32_t kVxlanSegmentIovecs = 4096;
// UDP source ports (send lanes) unless told: enough for an underlay's
// ECMP ways or a NIC's RSS queues to see several, few sockets.
inline constexpr uint16_t kVxlanDefaultSourcePorts = 8;

struct VxlanSocketPortOptions {
    uint32_t vni = 0;                // 1..16777215
    std::string local;               // the address the socket binds; empty: IPv4 any
    uint16_t dstport = 4789;         // bound (unless steered), and sent to
    std::vector<std::string> peers;  // the remote VTEPs, of the local address's family
    int socket_buffer_bytes = 4 << 20;
    // EVPN: a kernel vxlan device (zebra's table) holds dstport, so the
    // socket binds a port the kernel picks and takes dstport's datagrams
    // (to `local`, or any address) by UdpPortSteering. Nothing else in the
    // network namespace receives on dstport while the port lives.
    bool steer_dstport = false;
    // The UDP source ports (send lanes) inner flows are spread over,
    // 1..kVxlanMaxSendLanes; 1: every datagram from the receiving socket.
    uint16_t source_ports = kVxlanDefaultSourcePorts;
};

// What a control plane (EVPN: zebra's FDB entries on the kernel's vxlan
// device) says the port forwards by. VTEPs are IP literals of the socket's
// family; a MAC is unicast.
struct VxlanForwardingEntries {
    std::vector<std::string> flood;  // where broadcast, multicast and unknown unicast go
    std::vector<std::pair<packet::MacAddress, std::string>> remotes;  // MAC -> its VTEP
};

// What set_forwarding left out of a table, and why; the rest was taken.
struct VxlanForwardingSkipped {
    // At most this many reasons are kept; the counts cover every entry.
    static constexpr size_t kMaxReasons = 4;
    uint32_t flood = 0;                // flood-list entries left out
    uint32_t remotes = 0;              // remote MACs left out (their own, or their VTEP's fault)
    std::vector<std::string> reasons;  // one per VTEP or MAC refused
    uint32_t reasons_not_kept = 0;     // beyond kMaxReasons
    bool empty() const { return flood == 0 && remotes == 0; }
};

class VxlanSocketPort final : public Port, public BurstSource, public BurstSink {
public:
    // Binds the socket (and steers dstport to it) and sets the peers.
    // Throws PortSetupError (a bad address, the port in use: a kernel vxlan
    // device may hold it unless steer_dstport, no BPF for the steering).
    VxlanSocketPort(std::string name, const VxlanSocketPortOptions& options);
    ~VxlanSocketPort() override;

    QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this};
    }
    bool queue_ready(uint16_t) const override { return true; }
    WaitSpec receive_wait(uint16_t) const override;
    WaitSpec transmit_wait(uint16_t) const override;
    packet::QueueCounters& rx_counters(uint16_t) override { return rx_; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx_; }
    // "vxlan": the socket, the mode, the flood VTEPs, the MACs learned or
    // given, and the send and receive batches' counters.
    void describe(std::vector<Fact>& out) const override;

    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;
    uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) override;
    void complete_burst(uint16_t queue, const packet::PacketBurst& burst, uint16_t done) override;

    // Control thread, on the owning worker once one runs the port. A
    // remote VTEP (an IP literal of the socket's family); adding one that
    // is there, removing one that is not, a bad address, one more than
    // kVxlanMaxVteps, either after set_forwarding: std::invalid_argument.
    // Removing one forgets the MACs behind it.
    void add_peer(const std::string& address);
    void remove_peer(const std::string& address);
    // Control thread, on the owning worker: the whole forwarding table,
    // replacing the previous one (static peers and learned MACs the first
    // time); the port is in control-plane mode from then on. An entry the
    // port cannot take is left out and the rest taken, so one bad entry
    // does not cut the host off from every change after it: a VTEP that
    // is no IP literal of the socket's family or finds no slot (beyond
    // kVxlanMaxVteps, flood list first) goes with its remote MACs, a MAC
    // that is not unicast alone. Returns what was left out. A MAC listed
    // twice: the last one counts.
    VxlanForwardingSkipped set_forwarding(const VxlanForwardingEntries& entries);
    bool control_plane() const { return control_plane_.load(std::memory_order_relaxed); }
    // The VTEPs flooded to (static peers, or the control plane's flood list).
    std::vector<std::string> peers() const;
    uint32_t vni() const { return options_.vni; }
    const sockaddr_storage& local() const { return socket_.local(); }
    // The port the socket is bound to: dstport, or the kernel's pick when steered.
    uint16_t local_port() const { return socket_.local_port(); }
    // The port the tunnel runs on: received on, sent to.
    uint16_t dstport() const { return options_.dstport; }
    // The UDP source ports datagrams leave from, by lane (lane 0:
    // local_port()).
    std::vector<uint16_t> source_ports() const;
    // MACs learned and not aged out at `now_ns` (steady clock); on the
    // owning worker (it walks the worker's table).
    uint32_t learned_macs(uint64_t now_ns) const;
    // MACs learned and held in the table, an aged one until its slot is
    // reused; any thread (describe() shows it).
    uint32_t learned_held() const { return learned_held_.load(std::memory_order_relaxed); }
    // The control plane's remote MACs held, and those the table had no
    // room for (they flood), as of the last set_forwarding.
    uint32_t remotes_held() const { return remotes_held_.load(std::memory_order_relaxed); }
    uint32_t remotes_not_held() const { return remotes_not_held_.load(std::memory_order_relaxed); }

private:
    struct Learned {
        uint64_t mac = 0;  // 48 bits; 0: a free slot
        uint64_t seen_ns = 0;
        uint16_t peer = 0;
        bool pinned = false;  // the control plane's: never aged, never replaced by learning
    };
    static constexpr uint16_t kNoPeer = UINT16_MAX;

    // Where planning packet `packet` got to: it goes to `target` (a VTEP's
    // slot, or kNoPeer: every flood slot), as `frames` frames (1, or its segments in
    // the scratch), and the next frame to plan is segment `segment` to the
    // peer in slot `peer`. A packet bigger than one send (a GSO frame
    // flooded to many peers) is planned over several sends so.
    struct Cursor {
        bool started = false;
        bool offloaded = false;
        bool dropped_frame = false;  // the batch refused one of its frames
        bool planned_any = false;    // some frame of it is in a send
        uint16_t target = 0;
        uint16_t lane = 0;  // the send socket: the inner flow's
        uint16_t frames = 1;
        uint16_t peer = 0;
        uint16_t segment = 0;
    };

    // Plans what is left of packet `i` of `burst`; true once all of it is
    // planned (or it was dropped), false when the send must go first.
    bool plan_packet(const packet::PacketBurst& burst, uint16_t i);
    // Keeps what the current send has not sent for the next call: its
    // packets from `finished` (the first with a frame not sent) to `next`
    // (where planning stopped; planned in part if cursor_ started).
    // `resumed`: the send was the pending one, whose packets' identities
    // are known.
    void keep_pending(const packet::PacketBurst& burst, uint16_t finished, uint16_t next,
                      bool resumed);
    // Whether `burst` starts with the pending send's packets. Each in its
    // place, and the first one's bytes the same: a switch drops a held
    // group whole (its hold ended), so if the first is still the same
    // packet, so are those behind it. A retry while the socket stays full
    // costs a few comparisons a packet.
    bool offers_pending(const packet::PacketBurst& burst) const;
    // The VTEP slots changed while the pending send waited: a packet
    // planned in part plans no more of itself (see PendingSend).
    void stop_cursor_at_table_change();
    // Starts packet `i`: its destination, and for a GSO frame or a partial
    // checksum its segments written into the scratch. False: no room left
    // in the scratch behind what the batch holds (send first).
    bool start_packet(const packet::PacketBurst& burst, uint16_t i);
    // Scratch bytes the planned packet's `count` frames take, by
    // reference (their headers) or copied (all of them).
    uint32_t scratch_need(uint16_t count, bool by_reference) const;
    // The planned split's segments as headers in the scratch and slices of
    // `packet`; false (nothing kept) when the plan is not such a split or
    // its pieces do not fit segment_iovecs_.
    bool cut_by_reference(std::span<const iovec> packet, uint16_t count);
    // The planned packet's frames (whole, or segments) copied into the scratch.
    void copy_segments(std::span<const iovec> packet, uint16_t count);
    std::span<const iovec> frame_of(const packet::PacketBurst& burst, uint16_t i,
                                    uint16_t segment) const;
    // Puts up to `max` ready frames in raw_, each behind its header, learning
    // their source MACs.
    void gather_ready(uint16_t max);
    // Whether the ready frames of the message ready frame `first` starts
    // are at most `room`.
    bool fits_whole(uint32_t first, uint32_t room) const;
    uint16_t peer_of(uint64_t mac, uint64_t now_ns) const;
    void learn(uint64_t mac, uint16_t peer, uint64_t now_ns);
    uint16_t peer_index(const sockaddr_storage& address) const;
    void forget_peer(uint16_t peer);
    // Recounts flood_count_ and flood_end_ after the slots changed.
    void floods_changed();
    void refuse_if_control_plane() const;
    // Opens lanes 1.. (options_.source_ports); throws PortSetupError.
    void open_lanes();
    // `address` as a VTEP of the socket's family; `what` names it in the
    // message ("peer", "VTEP").
    sockaddr_storage parse_peer(const std::string& address, const char* what = "peer") const;

    std::string name_;
    VxlanSocketPortOptions options_;
    VxlanSocket socket_;
    std::unique_ptr<UdpPortSteering> steering_;  // null unless steer_dstport
    // Lanes 1.. (lane 0 is socket_), and every lane's fd for the send
    // batch; blocked_lane_: the lane whose full socket stopped the last
    // send, which transmit_wait() names.
    std::vector<VxlanSocket> lane_sockets_;
    std::array<int, kVxlanMaxSendLanes> lane_fds_{};
    uint16_t lanes_ = 1;
    uint16_t blocked_lane_ = 0;
    // VTEPs in fixed slots (a learned or given MAC names its slot);
    // present_[p] says whether slot p holds one, floods_[p] whether it is
    // flooded to (every present one in learning mode). The send batch is
    // given all slots and only ever targets present ones. flood_end_: one
    // past the last flood slot, where a flood's walk stops. The atomics
    // are written on the owning worker and also read by describe() on the
    // control thread (relaxed: plain loads and stores on x86).
    std::array<sockaddr_storage, kVxlanMaxVteps> peers_{};
    std::array<bool, kVxlanMaxVteps> present_{};
    std::array<bool, kVxlanMaxVteps> floods_{};
    std::atomic<uint16_t> flood_count_{0};
    uint16_t flood_end_ = 0;
    std::atomic<bool> control_plane_{false};
    std::atomic<uint32_t> remotes_held_{0};
    std::atomic<uint32_t> remotes_not_held_{0};
    std::vector<Learned> learned_;
    // Learned (not pinned) entries of learned_, counted by the worker as it
    // fills and empties slots, so that describe() on the control thread
    // never walks the worker's table.
    std::atomic<uint32_t> learned_held_{0};
    VxlanSendBatch send_;
    VxlanReceiveBatch receive_;
    virtio::OffloadAdaptation adaptation_;
    std::unique_ptr<uint8_t[]> scratch_;
    uint32_t scratch_used_ = 0;
    // The current packet's frames when it is offloaded: segment s is
    // segment_iovecs_[segment_start_[s], segment_start_[s + 1]) (by
    // reference: its headers in the scratch, then slices of the packet;
    // copied: one piece of the scratch).
    std::array<iovec, kVxlanSegmentIovecs> segment_iovecs_{};
    std::vector<uint32_t> segment_start_;
    Cursor cursor_;
    // Per planned frame of the current send: which packet of the burst it
    // belongs to, so that frames sent become packets done.
    std::array<uint16_t, packet::kMaxBurstPackets> frame_packet_{};
    // The current send's planned frames finished (sent, or dropped for
    // good), from the first: the send batch finishes them in order.
    uint16_t frames_finished_ = 0;
    // A send the socket filled up in the middle of. Its messages not sent
    // stay planned in send_, its frames' packets in frame_packet_
    // (renumbered from the first packet not finished), and cursor_ where
    // planning stopped; the next call sends that rest first if its burst
    // starts with the same packets (packet/packet_identity.hpp), so no
    // frame goes twice: not to the VTEPs a flooded packet reached, not a
    // GSO frame's segments that went, not a later packet's frame that went
    // ahead in a message its VTEP and lane had started earlier. A burst of
    // other packets (the source dropped these), and the rest is forgotten.
    // If the VTEP slots changed meanwhile (a peer added or removed, an
    // EVPN table), the planned messages still go where they were planned
    // to (the batch keeps each one's address), but a packet planned in
    // part is not planned further: its rest would be named by slots that
    // may now hold other VTEPs, some of which it reached already. What of
    // it went, went; the rest is dropped as a tx error. A packet not yet
    // planned at all is planned on the new table.
    struct PendingSend {
        bool active = false;
        uint16_t packets = 0;  // the packets it still names, the burst's first
        uint16_t next = 0;     // the first of them not wholly planned
        uint32_t slots_generation = 0;
        std::array<packet::PacketIdentity, packet::kMaxBurstPackets> identity{};
    };
    PendingSend pending_;
    // Bumped whenever the VTEP slots or the flood list change: a packet
    // planned in part names slots.
    uint32_t slots_generation_ = 0;
    // Packets of the current burst dropped whole (counted by reason): not
    // counted as packets sent.
    std::array<bool, packet::kMaxBurstPackets> dropped_{};
    uint16_t planned_frames_ = 0;

    // Receiving: the ready frames as received (raw_), merged (merged_)
    // when some are segments of one TCP flow, then appended to the
    // caller's burst. handed_sources_ is a FIFO of how many received frames
    // each frame handed out and not yet completed covers, so that frames
    // completed become received frames done.
    packet::PacketBurst raw_;
    packet::PacketBurst merged_;
    gro::BurstCoalescer coalescer_;
    std::array<uint16_t, packet::kMaxBurstPackets> handed_sources_{};
    uint16_t handed_head_ = 0;
    uint16_t handed_count_ = 0;
    packet::QueueCounters rx_;
    packet::QueueCounters tx_;
};

}  // namespace vnet::ports
