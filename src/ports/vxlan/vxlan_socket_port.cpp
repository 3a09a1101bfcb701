#include "ports/vxlan/vxlan_socket_port.hpp"

#include <arpa/inet.h>
#include <sys/epoll.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "common/steady_clock.hpp"
#include "packet/iovec.hpp"
#include "packet/tcp_checksum_check.hpp"
#include "ports/setup_error.hpp"
#include "ports/vxlan/vxlan_flow_hash.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {
namespace {

// What a received frame starts with: a virtio-net header that asks for
// nothing (the frame's checksums are complete: it crossed a wire), and
// for a TCP segment whose checksum was verified here, one that says so.
constexpr std::array<uint8_t, sizeof(virtio::NetHeader)> kPlainHeader{};
static_assert(virtio::kNetHeaderFlagsOffset == 0);
constexpr std::array<uint8_t, sizeof(virtio::NetHeader)> kVerifiedHeader{
    virtio::NetHeader::kFlagDataValid};

// Received TCP segments of one flow are merged; UDP datagrams are not (a
// USO frame is more than a tap or guest without USO can take).
constexpr gro::CoalesceOptions kMergeTcp{.tcp = true, .udp = false};

uint64_t mac_key(const uint8_t* mac) {
    uint64_t key = 0;
    std::memcpy(&key, mac, 6);
    return key;
}

bool is_group_mac(uint64_t key) {
    return (key & 1) != 0;
}  // I/G bit of the first byte

std::string mac_text(const packet::MacAddress& m) {
    char text[18];
    std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return text;
}

// Fibonacci hashing of the 48-bit MAC into the table.
uint32_t slot_of(uint64_t key) {
    return static_cast<uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 52) % kVxlanMaxLearnedMacs;
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
    if (a.ss_family != b.ss_family) {
        return false;
    }
    if (a.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        return x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(in6_addr)) == 0;
}

// An address's family and bytes, as a map key: texts that name one
// address (`::1`, `0::1`) find one slot.
std::array<uint8_t, 17> address_key(const sockaddr_storage& a) {
    std::array<uint8_t, 17> key{};
    key[0] = static_cast<uint8_t>(a.ss_family);
    if (a.ss_family == AF_INET) {
        std::memcpy(key.data() + 1, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, 4);
    } else {
        std::memcpy(key.data() + 1, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, 16);
    }
    return key;
}

std::string address_text(const sockaddr_storage& a) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, text, sizeof text);
    } else {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, text, sizeof text);
    }
    return text;
}

VxlanSocketOptions socket_options(const std::string& name, const VxlanSocketPortOptions& o) {
    VxlanSocketOptions so;
    so.local = make_vxlan_address(name, o.local.empty() ? "0.0.0.0" : o.local,
                                  o.steer_dstport ? 0 : o.dstport);
    so.receive_buffer_bytes = o.socket_buffer_bytes;
    so.send_buffer_bytes = o.socket_buffer_bytes;
    return so;
}

// A send lane: the receiving socket's address with a port of the kernel's
// choosing (bind never gives two sockets one port), its send buffer.
VxlanSocketOptions lane_options(const VxlanSocket& receiving, int send_buffer_bytes) {
    VxlanSocketOptions so;
    so.local = receiving.local();
    if (so.local.ss_family == AF_INET6) {
        reinterpret_cast<sockaddr_in6&>(so.local).sin6_port = 0;
    } else {
        reinterpret_cast<sockaddr_in&>(so.local).sin_port = 0;
    }
    so.send_buffer_bytes = send_buffer_bytes;
    so.send_only = true;
    return so;
}

}  // namespace

VxlanSocketPort::VxlanSocketPort(std::string name, const VxlanSocketPortOptions& options)
    : Port(name),
      name_("vxlan uplink '" + name + "'"),
      options_(options),
      socket_(name_, socket_options(name_, options)),
      steering_(options.steer_dstport ? std::make_unique<UdpPortSteering>(
                                            name_, socket_.fd(), options.dstport, options.local)
                                      : nullptr),
      learned_(kVxlanMaxLearnedMacs),
      send_(options.vni),
      receive_(options.vni, kVxlanReceiveBuffers),
      scratch_(new uint8_t[kVxlanScratchBytes]) {
    // Toward the wire: no offload, so GSO frames are cut and partial
    // checksums completed (the kernel's software GSO rules).
    adaptation_.set_receiver(virtio::ReceiverOffloads{});
    adaptation_.set_streaming_stores(false);  // the scratch is read back at once by the send
    segment_start_.reserve(size_t{virtio::kMaxTcpSegments} + 1);
    open_lanes();
    for (const std::string& peer : options.peers) {
        add_peer(peer);
    }
}

VxlanSocketPort::~VxlanSocketPort() = default;

void VxlanSocketPort::open_lanes() {
    if (options_.source_ports < 1 || options_.source_ports > kVxlanMaxSendLanes) {
        throw_option_error(name_, "source_ports must be 1.." + std::to_string(kVxlanMaxSendLanes) +
                                      ", not " + std::to_string(options_.source_ports));
    }
    lanes_ = options_.source_ports;
    lane_fds_[0] = socket_.fd();
    lane_sockets_.reserve(lanes_ - 1u);
    for (uint16_t lane = 1; lane < lanes_; ++lane) {
        lane_sockets_.emplace_back(name_, lane_options(socket_, options_.socket_buffer_bytes));
        lane_fds_[lane] = lane_sockets_.back().fd();
    }
}

std::vector<uint16_t> VxlanSocketPort::source_ports() const {
    std::vector<uint16_t> out{socket_.local_port()};
    for (const VxlanSocket& lane : lane_sockets_) {
        out.push_back(lane.local_port());
    }
    return out;
}

WaitSpec VxlanSocketPort::receive_wait(uint16_t) const {
    return {.fd = socket_.fd(), .events = EPOLLIN};
}

// The worker asks again before each sleep (Worker::sleep_until_ready), so
// the socket named may change from one wait to the next.
WaitSpec VxlanSocketPort::transmit_wait(uint16_t) const {
    return {.fd = lane_fds_[blocked_lane_], .events = EPOLLOUT};
}

// ---- sending ----------------------------------------------------------------

uint16_t VxlanSocketPort::transmit_burst(uint16_t, const packet::PacketBurst& burst) {
    uint16_t done = 0;  // packets finished: sent to every VTEP, or dropped
    uint16_t sent = 0;
    uint64_t bytes = 0;
    // The send the last call left unfinished goes on first if this burst
    // offers its packets again; if not, they were dropped, and its plan too.
    bool resuming = pending_.active && offers_pending(burst);
    pending_.active = false;
    if (!resuming) {
        cursor_ = {};
        dropped_.fill(false);
    } else if (pending_.slots_generation != slots_generation_) {
        stop_cursor_at_table_change();
    }
    while (done < burst.count) {
        uint16_t next = done;  // the first packet not wholly planned
        const bool resumed = resuming;
        if (resuming) {
            resuming = false;
            next = pending_.next;
        } else {
            send_.begin(peers_);
            planned_frames_ = 0;
            frames_finished_ = 0;
            // A packet planned in part (cursor_) may have its segments in
            // the scratch; otherwise nothing planned refers to it any more.
            if (!cursor_.started) {
                scratch_used_ = 0;
            }
            while (next < burst.count && plan_packet(burst, next)) {
                ++next;
            }
        }
        const VxlanSendResult result = send_.send(std::span<const int>(lane_fds_.data(), lanes_));
        frames_finished_ = static_cast<uint16_t>(frames_finished_ + result.frames_done);
        const bool all_sent = frames_finished_ == planned_frames_;
        // The socket is full: the packet of the first frame not sent waits
        // for EPOLLOUT, and the packets after it with it.
        const uint16_t finished = all_sent ? next : frame_packet_[frames_finished_];
        for (uint16_t p = done; p < finished; ++p) {
            if (!dropped_[p]) {  // dropped ones are counted by reason, not as packets
                bytes += burst.packets[p].len - burst.header_size;
                ++sent;
            }
        }
        done = finished;
        if (!all_sent) {
            blocked_lane_ = result.blocked_lane;
            keep_pending(burst, finished, next, resumed);
            break;
        }
        if (next == done && planned_frames_ == 0 && !cursor_.started) {
            break;  // (never expected) no progress
        }
    }
    tx_.count_burst(sent, bytes);
    return done;
}

void VxlanSocketPort::keep_pending(const packet::PacketBurst& burst, uint16_t finished,
                                   uint16_t next, bool resumed) {
    const uint16_t end = cursor_.started ? static_cast<uint16_t>(next + 1) : next;
    pending_.active = true;
    pending_.packets = static_cast<uint16_t>(end - finished);
    pending_.next = static_cast<uint16_t>(next - finished);
    pending_.slots_generation = slots_generation_;
    // Numbered from the first packet not finished: the next burst's first.
    // A resumed send names the packets it named before (offers_pending
    // checked them): their identities move down instead of being taken
    // again, so a retry against a socket still full costs little.
    for (uint16_t p = finished; p < end; ++p) {
        pending_.identity[p - finished] =
            resumed ? pending_.identity[p] : packet::PacketIdentity::of(burst, p);
        dropped_[p - finished] = dropped_[p];
    }
    std::fill(dropped_.begin() + pending_.packets, dropped_.end(), false);
    for (uint16_t f = frames_finished_; f < planned_frames_; ++f) {
        frame_packet_[f] = static_cast<uint16_t>(frame_packet_[f] - finished);
    }
}

bool VxlanSocketPort::offers_pending(const packet::PacketBurst& burst) const {
    if (burst.count < pending_.packets) {
        return false;
    }
    if (!pending_.identity[0].is(burst, 0)) {
        return false;
    }
    for (uint16_t p = 1; p < pending_.packets; ++p) {
        if (!pending_.identity[p].in_its_place(burst, p)) {
            return false;
        }
    }
    return true;
}

void VxlanSocketPort::stop_cursor_at_table_change() {
    if (!cursor_.started) {
        return;
    }
    if (!cursor_.planned_any) {
        cursor_ = {};  // nothing of it went: planned from its start, on the new table
        return;
    }
    cursor_.peer = kVxlanMaxVteps;  // past every slot: plan_packet finishes it
    cursor_.dropped_frame = true;
}

bool VxlanSocketPort::plan_packet(const packet::PacketBurst& burst, uint16_t i) {
    if (!cursor_.started) {
        if (!start_packet(burst, i)) {
            return false;
        }
    }
    if (cursor_.frames == 0) {  // dropped at its start, counted
        dropped_[i] = true;
        cursor_ = {};
        return true;
    }
    if (!cursor_.planned_any && planned_frames_ != 0) {
        // A packet whose frames fit one send but not what is left of this
        // one waits for the next: a GSO frame's segments stay one message,
        // which the receiver merges back whole.
        const uint32_t frames =
            uint32_t{cursor_.frames} *
            (cursor_.target == kNoPeer ? flood_count_.load(std::memory_order_relaxed) : 1);
        if (frames <= packet::kMaxBurstPackets && frames > send_.frames_free()) {
            return false;
        }
    }
    const uint16_t header_size = cursor_.offloaded
                                     ? static_cast<uint16_t>(adaptation_.receiver().header_size)
                                     : burst.header_size;
    // VTEP by VTEP, so that one VTEP's frames are consecutive: one message.
    // A unicast packet's cursor starts at its target's slot.
    const uint16_t end =
        cursor_.target == kNoPeer ? flood_end_ : static_cast<uint16_t>(cursor_.target + 1);
    for (; cursor_.peer < end; ++cursor_.peer, cursor_.segment = 0) {
        if (!present_[cursor_.peer] ||
            (cursor_.target == kNoPeer ? !floods_[cursor_.peer] : cursor_.peer != cursor_.target)) {
            continue;
        }
        for (; cursor_.segment < cursor_.frames; ++cursor_.segment) {
            const VxlanFrameVerdict verdict = send_.add_frame(
                frame_of(burst, i, cursor_.segment), header_size, cursor_.peer, cursor_.lane);
            if (verdict == VxlanFrameVerdict::batch_full) {
                return false;
            }
            if (verdict == VxlanFrameVerdict::planned) {
                frame_packet_[planned_frames_] = i;
                ++planned_frames_;
                cursor_.planned_any = true;
            } else {
                // Refused by the batch and counted there; needs_offload
                // here means the guest rewrote its header since we read
                // it: dropped as well.
                cursor_.dropped_frame = true;
            }
        }
    }
    if (cursor_.dropped_frame) {
        tx_.count_drop(packet::DropReason::tx_error);
    }
    if (!cursor_.planned_any) {
        // Nothing of it leaves: every frame refused (counted above), or no
        // VTEP to flood to.
        dropped_[i] = true;
        if (!cursor_.dropped_frame) {
            tx_.count_drop(packet::DropReason::no_destination);
        }
    }
    cursor_ = {};
    return true;
}

bool VxlanSocketPort::start_packet(const packet::PacketBurst& burst, uint16_t i) {
    const std::span<const iovec> packet = burst.packet_iovecs(i);
    const uint32_t len = burst.packets[i].len;
    const uint16_t header_size = burst.header_size;
    // A private copy of what decides the route and the lane: the guest may
    // rewrite its memory meanwhile, and the batch reads the header again
    // itself. With one lane, only the destination MAC is wanted.
    uint8_t head[sizeof(virtio::NetHeader) + kVxlanFlowHashBytes];
    const size_t wanted =
        lanes_ > 1 ? std::min<size_t>(len, header_size + kVxlanFlowHashBytes) : header_size + 6u;
    const bool whole_header = header_size <= sizeof(virtio::NetHeader) && len >= header_size + 14u;
    const size_t copied = whole_header ? packet::gather_prefix(packet, head, wanted) : 0;
    if (copied < header_size + 6u) {
        tx_.count_drop(packet::DropReason::packet_too_short);
        cursor_ = {.started = true, .frames = 0};
        return true;
    }
    const uint64_t destination = mac_key(head + header_size);
    // Once per packet: its segments and flood copies all take this lane.
    const uint16_t lane =
        lanes_ > 1
            ? vxlan_lane_of(vxlan_inner_flow_hash(head + header_size, copied - header_size), lanes_)
            : 0;
    Cursor c{.started = true,
             .target = is_group_mac(destination) ? kNoPeer : peer_of(destination, steady_now_ns()),
             .lane = lane};
    c.peer = c.target == kNoPeer ? 0 : c.target;
    const bool offload =
        (head[virtio::kNetHeaderFlagsOffset] & virtio::NetHeader::kFlagNeedsCsum) != 0 ||
        head[virtio::kNetHeaderGsoTypeOffset] != virtio::NetHeader::kGsoNone;
    if (offload) {
        const virtio::DeliveryPlan& plan = adaptation_.plan(packet, len, header_size);
        if (plan.how == virtio::Delivery::drop) {
            tx_.count_drop(plan.drop_reason);
            cursor_ = {.started = true, .frames = 0};
            return true;
        }
        const uint16_t count = plan.how == virtio::Delivery::whole ? 1 : plan.segment_count;
        // By reference where the plan allows it (and its pieces fit), else
        // copied; either way the scratch must have room behind what the
        // batch holds.
        bool by_reference =
            plan.how == virtio::Delivery::segments && plan.gso_type != virtio::NetHeader::kGsoUdp;
        for (;;) {
            if (scratch_used_ + scratch_need(count, by_reference) > kVxlanScratchBytes) {
                if (planned_frames_ != 0 || scratch_used_ != 0) {
                    return false;  // send what is planned first, then the scratch is free
                }
                tx_.count_drop(packet::DropReason::too_many_segments);
                cursor_ = {.started = true, .frames = 0};
                return true;
            }
            if (!by_reference || cut_by_reference(packet, count)) {
                break;
            }
            by_reference = false;  // too many pieces: copied instead
        }
        if (!by_reference) {
            copy_segments(packet, count);
        }
        c.offloaded = true;
        c.frames = count;
    }
    cursor_ = c;
    return true;
}

uint32_t VxlanSocketPort::scratch_need(uint16_t count, bool by_reference) const {
    if (by_reference) {
        return uint32_t{count} * adaptation_.segment_headers_len();  // headers only
    }
    const bool whole = adaptation_.current().how == virtio::Delivery::whole;
    uint32_t need = 0;
    for (uint16_t s = 0; s < count; ++s) {
        need += whole ? adaptation_.whole_len() : adaptation_.segment_len(s);
    }
    return need;
}

bool VxlanSocketPort::cut_by_reference(std::span<const iovec> packet, uint16_t count) {
    // Each segment: its headers, rewritten into the scratch, then its
    // payload where the sender's packet holds it; the kernel copies it
    // once, in the send (a copy here first cost the sender 40 % of its CPU
    // with 64 KB frames: docs/BENCHMARKS.md, "Two hosts over VXLAN").
    const uint32_t scratch_start = scratch_used_;
    segment_start_.resize(size_t{count} + 1);  // reserved: no allocation
    uint32_t used = 0;
    for (uint16_t s = 0; s < count; ++s) {
        segment_start_[s] = used;
        if (used + 1 >= segment_iovecs_.size()) {
            scratch_used_ = scratch_start;
            return false;
        }
        const int slices = adaptation_.segment_by_reference(
            s, packet, std::span<iovec>(segment_iovecs_).subspan(used + 1));
        if (slices < 0) {
            scratch_used_ = scratch_start;
            return false;  // not a split it can do, or too many pieces: copy it
        }
        const uint32_t headers = adaptation_.segment_headers_len();
        std::memcpy(scratch_.get() + scratch_used_, adaptation_.segment_headers(), headers);
        segment_iovecs_[used] = {scratch_.get() + scratch_used_, headers};
        scratch_used_ += headers;
        used += 1 + static_cast<uint32_t>(slices);
    }
    segment_start_[count] = used;
    return true;
}

void VxlanSocketPort::copy_segments(std::span<const iovec> packet, uint16_t count) {
    const bool whole = adaptation_.current().how == virtio::Delivery::whole;
    segment_start_.resize(size_t{count} + 1);
    for (uint16_t s = 0; s < count; ++s) {
        iovec out{scratch_.get() + scratch_used_,
                  whole ? adaptation_.whole_len() : adaptation_.segment_len(s)};
        out.iov_len = whole ? adaptation_.write_whole(packet, {&out, 1})
                            : adaptation_.write_segment(s, packet, {&out, 1});
        scratch_used_ += static_cast<uint32_t>(out.iov_len);
        segment_iovecs_[s] = out;
        segment_start_[s] = s;
    }
    segment_start_[count] = count;
}

std::span<const iovec> VxlanSocketPort::frame_of(const packet::PacketBurst& burst, uint16_t i,
                                                 uint16_t segment) const {
    return cursor_.offloaded
               ? std::span<const iovec>(segment_iovecs_.data() + segment_start_[segment],
                                        segment_start_[segment + 1] - segment_start_[segment])
               : burst.packet_iovecs(i);
}

// ---- receiving --------------------------------------------------------------

void VxlanSocketPort::gather_ready(uint16_t max) {
    raw_.clear();
    raw_.header_size = sizeof(virtio::NetHeader);
    const uint64_t now = steady_now_ns();
    const uint32_t n = std::min<uint32_t>(receive_.ready(), max);
    // A buffer holds one message, from one sender: its peer is looked up
    // once per buffer, not per frame.
    uint16_t buffer = UINT16_MAX;
    uint16_t peer = kNoPeer;
    for (uint32_t i = 0; i < n; ++i) {
        const VxlanReceivedFrame& frame = receive_.ready_frame(i);
        if (frame.buffer != buffer) {
            // A message goes in whole: its datagrams may be the segments of
            // one GSO frame, which a cut would merge back as two frames.
            // Only a message bigger than the whole window is cut.
            if (raw_.count != 0 && !fits_whole(i, static_cast<uint32_t>(max - raw_.count))) {
                break;
            }
            buffer = frame.buffer;
            // In control-plane mode nothing is learned: no lookup.
            peer = control_plane() ? kNoPeer : peer_index(receive_.source(frame));
        }
        if (peer != kNoPeer) {
            learn(mac_key(frame.data + 6), peer, now);
        }
        const auto& header =
            packet::tcp_checksum_verifies(frame.data, frame.len) ? kVerifiedHeader : kPlainHeader;
        std::span<iovec> iov = raw_.free_iovecs();
        iov[0] = {const_cast<uint8_t*>(header.data()), header.size()};
        iov[1] = {const_cast<uint8_t*>(frame.data), frame.len};
        raw_.push(2, static_cast<uint32_t>(header.size() + frame.len), 0);
    }
}

bool VxlanSocketPort::fits_whole(uint32_t first, uint32_t room) const {
    const uint16_t buffer = receive_.ready_frame(first).buffer;
    uint32_t i = first;
    while (i < receive_.ready() && receive_.ready_frame(i).buffer == buffer && i - first <= room) {
        ++i;
    }
    return i - first <= room;
}

uint16_t VxlanSocketPort::receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t max) {
    if (handed_count_ == packet::kMaxBurstPackets ||
        (receive_.ready() == 0 && receive_.receive(socket_.fd()) == 0)) {
        return 0;
    }
    // Up to a burst of received frames whatever `max` is: `max` bounds the
    // frames handed out, and a merged one covers many received ones (a
    // switch that cut its bursts to a few frames after a hold ended in
    // drops grows them again only when it gets as many as it asked for).
    gather_ready(static_cast<uint16_t>(packet::kMaxBurstPackets - handed_count_));
    const packet::PacketBurst* out = &raw_;
    if (gro::BurstCoalescer::may_merge(raw_, raw_.header_size, kMergeTcp) &&
        coalescer_.coalesce(raw_, raw_.header_size, kMergeTcp, merged_).merged_frames != 0) {
        out = &merged_;
    }
    burst.header_size = raw_.header_size;
    uint16_t frames = 0;
    uint16_t sources = 0;  // received frames the handed-out ones cover
    uint64_t bytes = 0;
    uint64_t merged_frames = 0;
    uint64_t merged_sources = 0;
    for (; frames < out->count && frames < max && !burst.full(); ++frames) {
        const std::span<const iovec> iov = out->packet_iovecs(frames);
        if (burst.free_iovecs().size() < iov.size()) {
            break;  // the rest stays ready for the next call
        }
        std::copy(iov.begin(), iov.end(), burst.free_iovecs().begin());
        burst.push(static_cast<uint16_t>(iov.size()), out->packets[frames].len, 0);
        const uint16_t end = out == &raw_
                                 ? static_cast<uint16_t>(frames + 1)
                                 : coalescer_.source_packets(static_cast<uint16_t>(frames + 1));
        const auto covered = static_cast<uint16_t>(end - sources);
        if (covered > 1) {
            ++merged_frames;
            merged_sources += covered;
        }
        for (uint16_t s = sources; s < end; ++s) {
            bytes += raw_.packets[s].len - raw_.header_size;
        }
        sources = end;
        handed_sources_[(handed_head_ + handed_count_++) % packet::kMaxBurstPackets] = covered;
    }
    receive_.take(sources);
    rx_.count_burst(sources, bytes);
    rx_.gro_frames.add(merged_frames);
    rx_.gro_segments.add(merged_sources);
    return frames;
}

void VxlanSocketPort::complete_burst(uint16_t, const packet::PacketBurst&, uint16_t done) {
    uint32_t sources = 0;
    for (uint16_t i = 0; i < done && handed_count_ != 0; ++i, --handed_count_) {
        sources += handed_sources_[handed_head_];
        handed_head_ = static_cast<uint16_t>((handed_head_ + 1) % packet::kMaxBurstPackets);
    }
    receive_.complete(sources);
}

// ---- learning ---------------------------------------------------------------

uint16_t VxlanSocketPort::peer_of(uint64_t mac, uint64_t now_ns) const {
    uint32_t slot = slot_of(mac);
    for (uint32_t probe = 0; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
        const Learned& e = learned_[slot];
        if (e.mac == mac) {
            return e.pinned || now_ns - e.seen_ns < kVxlanMacAgeNs ? e.peer : kNoPeer;
        }
        if (e.mac == 0) {
            return kNoPeer;
        }
    }
    return kNoPeer;
}

void VxlanSocketPort::learn(uint64_t mac, uint16_t peer, uint64_t now_ns) {
    if (is_group_mac(mac) || mac == 0) {
        return;
    }
    uint32_t slot = slot_of(mac);
    Learned* free_or_aged = nullptr;
    for (uint32_t probe = 0; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
        Learned& e = learned_[slot];
        if (e.mac == mac) {
            if (!e.pinned) {  // the control plane's place wins over a frame's
                e.peer = peer;
                e.seen_ns = now_ns;
            }
            return;
        }
        if (e.mac == 0 || (!e.pinned && now_ns - e.seen_ns >= kVxlanMacAgeNs)) {
            if (free_or_aged == nullptr) {
                free_or_aged = &e;
            }
            if (e.mac == 0) {
                break;
            }
        }
    }
    if (free_or_aged != nullptr) {
        if (free_or_aged->mac == 0) {  // an aged entry was counted already
            learned_held_.store(learned_held_.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
        }
        *free_or_aged = {.mac = mac, .seen_ns = now_ns, .peer = peer};
    }
}

uint16_t VxlanSocketPort::peer_index(const sockaddr_storage& address) const {
    for (uint16_t p = 0; p < kVxlanMaxVteps; ++p) {
        if (present_[p] && same_address(peers_[p], address)) {
            return p;
        }
    }
    return kNoPeer;
}

uint32_t VxlanSocketPort::learned_macs(uint64_t now_ns) const {
    return static_cast<uint32_t>(
        std::count_if(learned_.begin(), learned_.end(), [&](const Learned& e) {
            return e.mac != 0 && !e.pinned && now_ns - e.seen_ns < kVxlanMacAgeNs;
        }));
}

// ---- peers (control thread, on the owning worker) ---------------------------

sockaddr_storage VxlanSocketPort::parse_peer(const std::string& address, const char* what) const {
    sockaddr_storage peer{};
    try {
        peer = make_vxlan_address(name_, address, options_.dstport);
    } catch (const std::exception&) {
        throw std::invalid_argument(name_ + ": " + what + " '" + address +
                                    "' is not an IPv4 or IPv6 address");
    }
    if (peer.ss_family != socket_.local().ss_family) {
        throw std::invalid_argument(name_ + ": " + what + " " + address +
                                    " is not of the local address's family (one family per "
                                    "overlay)");
    }
    return peer;
}

void VxlanSocketPort::refuse_if_control_plane() const {
    if (control_plane()) {
        throw std::invalid_argument(name_ +
                                    " is driven by EVPN: its VTEPs are the control plane's, "
                                    "not static peers");
    }
}

void VxlanSocketPort::add_peer(const std::string& address) {
    refuse_if_control_plane();
    const sockaddr_storage peer = parse_peer(address);
    if (peer_index(peer) != kNoPeer) {
        throw std::invalid_argument(name_ + ": peer " + address + " is there already");
    }
    const auto slot = std::find(present_.begin(), present_.end(), false);
    if (slot == present_.end()) {
        throw std::invalid_argument(name_ + ": " + std::to_string(kVxlanMaxVteps) +
                                    " peers already, the most one uplink floods to");
    }
    const auto p = static_cast<size_t>(slot - present_.begin());
    peers_[p] = peer;
    present_[p] = true;
    floods_[p] = true;  // a static peer is flooded to
    floods_changed();
}

void VxlanSocketPort::remove_peer(const std::string& address) {
    refuse_if_control_plane();
    const uint16_t p = peer_index(parse_peer(address));
    if (p == kNoPeer) {
        throw std::invalid_argument(name_ + ": peer " + address + " is not there");
    }
    present_[p] = false;
    floods_[p] = false;
    peers_[p] = {};
    floods_changed();
    forget_peer(p);
}

VxlanForwardingSkipped VxlanSocketPort::set_forwarding(const VxlanForwardingEntries& entries) {
    // Everything is worked out before anything changes, on the worker, so
    // in O(n log n) for a table of a thousand VTEPs. Each distinct text is
    // parsed once; texts that differ but name one address share a slot.
    VxlanForwardingSkipped skipped;
    auto skip = [&skipped](const std::string& reason) {
        if (skipped.reasons.size() < VxlanForwardingSkipped::kMaxReasons) {
            skipped.reasons.push_back(reason);
        } else {
            ++skipped.reasons_not_kept;
        }
    };
    constexpr int kLeftOut = -1;
    std::vector<sockaddr_storage> vteps;
    std::map<std::array<uint8_t, 17>, int> slot_of_address;
    std::map<std::string, int> slot_of_text;
    auto slot_for = [&](const std::string& text) {
        if (const auto known = slot_of_text.find(text); known != slot_of_text.end()) {
            return known->second;
        }
        int slot = kLeftOut;
        try {
            const sockaddr_storage address = parse_peer(text, "VTEP");
            const auto key = address_key(address);
            if (const auto known = slot_of_address.find(key); known != slot_of_address.end()) {
                slot = known->second;
            } else {
                if (vteps.size() == kVxlanMaxVteps) {
                    throw std::invalid_argument(name_ + ": VTEP " + text + " left out: more than " +
                                                std::to_string(kVxlanMaxVteps) +
                                                " VTEPs (flood list and remote MACs' together), "
                                                "the most one uplink holds");
                }
                slot = static_cast<int>(vteps.size());
                vteps.push_back(address);
                slot_of_address.emplace(key, slot);
            }
        } catch (const std::invalid_argument& e) {
            skip(e.what());
        }
        slot_of_text.emplace(text, slot);
        return slot;
    };
    std::vector<uint16_t> flood_slots;
    flood_slots.reserve(entries.flood.size());
    for (const std::string& vtep : entries.flood) {
        const int slot = slot_for(vtep);
        if (slot == kLeftOut) {
            ++skipped.flood;
            continue;
        }
        flood_slots.push_back(static_cast<uint16_t>(slot));
    }
    std::vector<Learned> remotes;
    remotes.reserve(entries.remotes.size());
    for (const auto& remote : entries.remotes) {
        const uint64_t mac = mac_key(remote.first.data());
        if (mac == 0 || is_group_mac(mac)) {
            skip(name_ + ": remote MAC " + mac_text(remote.first) + " is not a unicast address");
            ++skipped.remotes;
            continue;
        }
        const int slot = slot_for(remote.second);
        if (slot == kLeftOut) {
            ++skipped.remotes;
            continue;
        }
        remotes.push_back({.mac = mac, .peer = static_cast<uint16_t>(slot), .pinned = true});
    }

    peers_.fill({});
    present_.fill(false);
    floods_.fill(false);
    for (size_t p = 0; p < vteps.size(); ++p) {
        peers_[p] = vteps[p];
        present_[p] = true;
    }
    for (const uint16_t p : flood_slots) {
        floods_[p] = true;
    }
    control_plane_.store(true, std::memory_order_relaxed);
    floods_changed();
    // The learned MACs (before the first call) and the previous remotes go.
    std::fill(learned_.begin(), learned_.end(), Learned{});
    learned_held_.store(0, std::memory_order_relaxed);
    uint32_t not_held = 0;
    for (const Learned& remote : remotes) {
        uint32_t slot = slot_of(remote.mac);
        uint32_t probe = 0;
        for (; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
            if (learned_[slot].mac == 0 || learned_[slot].mac == remote.mac) {
                learned_[slot] = remote;  // listed twice: the last one counts
                break;
            }
        }
        if (probe == 8) {
            ++not_held;  // its probe run is full: it floods
        }
    }
    remotes_not_held_.store(not_held, std::memory_order_relaxed);
    remotes_held_.store(
        static_cast<uint32_t>(std::count_if(learned_.begin(), learned_.end(),
                                            [](const Learned& e) { return e.pinned; })),
        std::memory_order_relaxed);
    return skipped;
}

void VxlanSocketPort::floods_changed() {
    ++slots_generation_;
    flood_count_.store(static_cast<uint16_t>(std::count(floods_.begin(), floods_.end(), true)),
                       std::memory_order_relaxed);
    flood_end_ = 0;
    for (uint16_t p = 0; p < kVxlanMaxVteps; ++p) {
        if (floods_[p]) {
            flood_end_ = static_cast<uint16_t>(p + 1);
        }
    }
}

void VxlanSocketPort::forget_peer(uint16_t peer) {
    // Rebuilt without the peer's MACs: a removed entry must not break the
    // probe runs of the others.
    std::vector<Learned> kept;
    for (const Learned& e : learned_) {
        if (e.mac != 0 && e.peer != peer) {
            kept.push_back(e);
        }
    }
    std::fill(learned_.begin(), learned_.end(), Learned{});
    uint32_t held = 0;
    for (const Learned& e : kept) {
        uint32_t slot = slot_of(e.mac);
        for (uint32_t probe = 0; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
            if (learned_[slot].mac == 0) {
                learned_[slot] = e;
                ++held;
                break;
            }
        }
    }
    learned_held_.store(held, std::memory_order_relaxed);
}

std::vector<std::string> VxlanSocketPort::peers() const {
    std::vector<std::string> out;
    for (uint16_t p = 0; p < kVxlanMaxVteps; ++p) {
        if (floods_[p]) {
            out.push_back(address_text(peers_[p]));
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

void VxlanSocketPort::describe(std::vector<Fact>& out) const {
    out.push_back({"vxlan", "datapath", std::string("socket")});
    out.push_back({"vxlan", "local", address_text(socket_.local())});
    out.push_back({"vxlan", "port", uint64_t{socket_.local_port()}});
    out.push_back({"vxlan", "dstport", uint64_t{options_.dstport}});
    // The UDP source ports the inner flows are spread over, lane 0 first.
    std::string ports;
    for (const uint16_t p : source_ports()) {
        ports += (ports.empty() ? "" : ",") + std::to_string(p);
    }
    out.push_back({"vxlan", "source_ports", ports});
    // The steering program's id (bpftool prog show id N), 0 when the socket
    // is bound to dstport itself.
    out.push_back(
        {"vxlan", "steering_program", uint64_t{steering_ ? steering_->program_id() : 0u}});
    out.push_back({"vxlan", "control_plane", std::string(control_plane() ? "evpn" : "learning")});
    out.push_back({"vxlan", "flood_vteps", uint64_t{flood_count_.load(std::memory_order_relaxed)}});
    out.push_back({"vxlan", "learned_macs", uint64_t{learned_held()}});
    out.push_back({"vxlan", "remotes", uint64_t{remotes_held()}});
    out.push_back({"vxlan", "remotes_not_held", uint64_t{remotes_not_held()}});
    for (const auto& field : kVxlanSendCounterFields) {
        out.push_back(
            {"vxlan_send", std::string(field.name), (send_.counters().*field.counter).get()});
    }
    for (const auto& field : kVxlanReceiveCounterFields) {
        out.push_back(
            {"vxlan_receive", std::string(field.name), (receive_.counters().*field.counter).get()});
    }
}

}  // namespace vnet::ports
