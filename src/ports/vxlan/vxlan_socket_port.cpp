#include "ports/vxlan/vxlan_socket_port.hpp"

#include <arpa/inet.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "common/steady_clock.hpp"
#include "packet/iovec.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {
namespace {

// What every received frame starts with: a virtio-net header that asks for
// nothing (the frame's checksums are complete: it crossed a wire).
constexpr std::array<uint8_t, sizeof(virtio::NetHeader)> kPlainHeader{};

uint64_t mac_key(const uint8_t* mac) {
    uint64_t key = 0;
    std::memcpy(&key, mac, 6);
    return key;
}

bool is_group_mac(uint64_t key) {
    return (key & 1) != 0;
}  // I/G bit of the first byte

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
    so.local = make_vxlan_address(name, o.local.empty() ? "0.0.0.0" : o.local, o.dstport);
    so.receive_buffer_bytes = o.socket_buffer_bytes;
    so.send_buffer_bytes = o.socket_buffer_bytes;
    return so;
}

}  // namespace

VxlanSocketPort::VxlanSocketPort(std::string name, const VxlanSocketPortOptions& options)
    : Port(name),
      name_("vxlan uplink '" + name + "'"),
      options_(options),
      socket_(name_, socket_options(name_, options)),
      learned_(kVxlanMaxLearnedMacs),
      send_(options.vni),
      receive_(options.vni, kVxlanReceiveBuffers),
      scratch_(new uint8_t[kVxlanScratchBytes]) {
    // Toward the wire: no offload, so GSO frames are cut and partial
    // checksums completed (the kernel's software GSO rules).
    adaptation_.set_receiver(virtio::ReceiverOffloads{});
    adaptation_.set_streaming_stores(false);  // the scratch is read back at once by the send
    segments_.reserve(virtio::kMaxTcpSegments);
    for (const std::string& peer : options.peers) {
        add_peer(peer);
    }
}

VxlanSocketPort::~VxlanSocketPort() = default;

WaitSpec VxlanSocketPort::receive_wait(uint16_t) const {
    return {.fd = socket_.fd(), .events = EPOLLIN};
}

WaitSpec VxlanSocketPort::transmit_wait(uint16_t) const {
    return {.fd = socket_.fd(), .events = EPOLLOUT};
}

// ---- sending ----------------------------------------------------------------

uint16_t VxlanSocketPort::transmit_burst(uint16_t, const packet::PacketBurst& burst) {
    uint16_t done = 0;  // packets finished: sent to every VTEP, or dropped
    uint16_t sent = 0;
    uint64_t bytes = 0;
    cursor_ = {};
    dropped_.fill(false);
    while (done < burst.count) {
        send_.begin(peers_);
        planned_frames_ = 0;
        if (!cursor_.started) {
            scratch_used_ = 0;  // nothing planned refers to it any more
        }
        uint16_t next = done;  // the first packet not wholly planned
        while (next < burst.count && plan_packet(burst, next)) {
            ++next;
        }
        const VxlanSendResult result = send_.send(socket_.fd());
        uint16_t finished = next;
        const bool all_sent = result.frames_done == planned_frames_;
        if (!all_sent) {
            // The socket is full: the packet of the first frame not sent
            // waits, whole, for EPOLLOUT (a packet flooded or segmented
            // whose first frames went is sent again whole: a duplicate to
            // some peers rather than a loss; TCP and ARP take both).
            finished = frame_packet_[result.frames_done];
            cursor_ = {};
        }
        for (uint16_t p = done; p < finished; ++p) {
            if (!dropped_[p]) {  // dropped ones are counted by reason, not as packets
                bytes += burst.packets[p].len - burst.header_size;
                ++sent;
            }
        }
        done = finished;
        if (!all_sent || (next == done && planned_frames_ == 0 && !cursor_.started)) {
            break;  // the socket is full, or (never expected) no progress
        }
    }
    tx_.count_burst(sent, bytes);
    return done;
}

bool VxlanSocketPort::plan_packet(const packet::PacketBurst& burst, uint16_t i) {
    if (!cursor_.started && !start_packet(burst, i)) {
        return false;
    }
    if (cursor_.frames == 0) {  // dropped at its start, counted
        dropped_[i] = true;
        cursor_ = {};
        return true;
    }
    const uint16_t header_size = cursor_.offloaded
                                     ? static_cast<uint16_t>(adaptation_.receiver().header_size)
                                     : burst.header_size;
    // Peer by peer, so that one peer's frames are consecutive: one message.
    for (; cursor_.peer < kVxlanMaxPeers; ++cursor_.peer, cursor_.segment = 0) {
        if (!present_[cursor_.peer] ||
            (cursor_.target != kNoPeer && cursor_.peer != cursor_.target)) {
            continue;
        }
        for (; cursor_.segment < cursor_.frames; ++cursor_.segment) {
            const VxlanFrameVerdict verdict =
                send_.add_frame(frame_of(burst, i, cursor_.segment), header_size, cursor_.peer);
            if (verdict == VxlanFrameVerdict::batch_full) {
                return false;
            }
            if (verdict == VxlanFrameVerdict::planned) {
                frame_packet_[planned_frames_++] = i;
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
        // peer to flood to.
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
    // A private copy of what decides the route: the guest may rewrite its
    // memory meanwhile, and the batch reads the header again itself.
    uint8_t head[sizeof(virtio::NetHeader) + 6] = {};
    if (header_size > sizeof(virtio::NetHeader) || len < header_size + 14u ||
        packet::gather_prefix(packet, head, header_size + 6u) != header_size + 6u) {
        tx_.count_drop(packet::DropReason::packet_too_short);
        cursor_ = {.started = true, .frames = 0};
        return true;
    }
    const uint64_t destination = mac_key(head + header_size);
    Cursor c{.started = true,
             .target = is_group_mac(destination) ? kNoPeer : peer_of(destination, steady_now_ns())};
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
        const bool whole = plan.how == virtio::Delivery::whole;
        const uint16_t count = whole ? 1 : plan.segment_count;
        uint32_t need = 0;
        for (uint16_t s = 0; s < count; ++s) {
            need += whole ? adaptation_.whole_len() : adaptation_.segment_len(s);
        }
        if (scratch_used_ + need > kVxlanScratchBytes) {
            if (planned_frames_ != 0 || scratch_used_ != 0) {
                return false;  // send what is planned first, then the scratch is free
            }
            tx_.count_drop(packet::DropReason::too_many_segments);
            cursor_ = {.started = true, .frames = 0};
            return true;
        }
        segments_.resize(count);  // reserved for kMaxTcpSegments: no allocation
        for (uint16_t s = 0; s < count; ++s) {
            iovec out{scratch_.get() + scratch_used_,
                      whole ? adaptation_.whole_len() : adaptation_.segment_len(s)};
            out.iov_len = whole ? adaptation_.write_whole(packet, {&out, 1})
                                : adaptation_.write_segment(s, packet, {&out, 1});
            scratch_used_ += static_cast<uint32_t>(out.iov_len);
            segments_[s] = out;
        }
        c.offloaded = true;
        c.frames = count;
    }
    cursor_ = c;
    return true;
}

std::span<const iovec> VxlanSocketPort::frame_of(const packet::PacketBurst& burst, uint16_t i,
                                                 uint16_t segment) const {
    return cursor_.offloaded ? std::span<const iovec>(&segments_[segment], 1)
                             : burst.packet_iovecs(i);
}

// ---- receiving --------------------------------------------------------------

uint16_t VxlanSocketPort::receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t max) {
    if (receive_.ready() == 0 && receive_.receive(socket_.fd()) == 0) {
        return 0;
    }
    const uint64_t now = steady_now_ns();
    burst.header_size = sizeof(virtio::NetHeader);
    const uint32_t n = std::min<uint32_t>(receive_.ready(), max);
    uint64_t bytes = 0;
    uint16_t added = 0;
    // A buffer holds one message, from one sender: its peer is looked up
    // once per buffer, not per frame.
    uint16_t buffer = UINT16_MAX;
    uint16_t peer = kNoPeer;
    for (uint32_t i = 0; i < n && !burst.full() && burst.free_iovecs().size() >= 2; ++i) {
        const VxlanReceivedFrame& frame = receive_.ready_frame(i);
        if (frame.buffer != buffer) {
            buffer = frame.buffer;
            peer = peer_index(receive_.source(frame));
        }
        if (peer != kNoPeer) {
            learn(mac_key(frame.data + 6), peer, now);
        }
        std::span<iovec> iov = burst.free_iovecs();
        iov[0] = {const_cast<uint8_t*>(kPlainHeader.data()), kPlainHeader.size()};
        iov[1] = {const_cast<uint8_t*>(frame.data), frame.len};
        burst.push(2, static_cast<uint32_t>(kPlainHeader.size() + frame.len), 0);
        bytes += frame.len;
        ++added;
    }
    receive_.take(added);
    rx_.count_burst(added, bytes);
    return added;
}

void VxlanSocketPort::complete_burst(uint16_t, const packet::PacketBurst&, uint16_t done) {
    receive_.complete(done);
}

// ---- learning ---------------------------------------------------------------

uint16_t VxlanSocketPort::peer_of(uint64_t mac, uint64_t now_ns) const {
    uint32_t slot = slot_of(mac);
    for (uint32_t probe = 0; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
        const Learned& e = learned_[slot];
        if (e.mac == mac) {
            return now_ns - e.seen_ns < kVxlanMacAgeNs ? e.peer : kNoPeer;
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
            e.peer = peer;
            e.seen_ns = now_ns;
            return;
        }
        if (e.mac == 0 || now_ns - e.seen_ns >= kVxlanMacAgeNs) {
            if (free_or_aged == nullptr) {
                free_or_aged = &e;
            }
            if (e.mac == 0) {
                break;
            }
        }
    }
    if (free_or_aged != nullptr) {
        *free_or_aged = {.mac = mac, .seen_ns = now_ns, .peer = peer};
    }
}

uint16_t VxlanSocketPort::peer_index(const sockaddr_storage& address) const {
    for (uint16_t p = 0; p < kVxlanMaxPeers; ++p) {
        if (present_[p] && same_address(peers_[p], address)) {
            return p;
        }
    }
    return kNoPeer;
}

uint32_t VxlanSocketPort::learned_macs(uint64_t now_ns) const {
    return static_cast<uint32_t>(std::count_if(
        learned_.begin(), learned_.end(),
        [&](const Learned& e) { return e.mac != 0 && now_ns - e.seen_ns < kVxlanMacAgeNs; }));
}

// ---- peers (control thread, on the owning worker) ---------------------------

sockaddr_storage VxlanSocketPort::parse_peer(const std::string& address) const {
    sockaddr_storage peer{};
    try {
        peer = make_vxlan_address(name_, address, options_.dstport);
    } catch (const std::exception&) {
        throw std::invalid_argument(name_ + ": peer '" + address +
                                    "' is not an IPv4 or IPv6 address");
    }
    if (peer.ss_family != socket_.local().ss_family) {
        throw std::invalid_argument(name_ + ": peer " + address +
                                    " is not of the local address's family (one family per "
                                    "overlay)");
    }
    return peer;
}

void VxlanSocketPort::add_peer(const std::string& address) {
    const sockaddr_storage peer = parse_peer(address);
    if (peer_index(peer) != kNoPeer) {
        throw std::invalid_argument(name_ + ": peer " + address + " is there already");
    }
    const auto slot = std::find(present_.begin(), present_.end(), false);
    if (slot == present_.end()) {
        throw std::invalid_argument(name_ + ": " + std::to_string(kVxlanMaxPeers) +
                                    " peers already, the most one uplink floods to");
    }
    const auto p = static_cast<size_t>(slot - present_.begin());
    peers_[p] = peer;
    present_[p] = true;
}

void VxlanSocketPort::remove_peer(const std::string& address) {
    const uint16_t p = peer_index(parse_peer(address));
    if (p == kNoPeer) {
        throw std::invalid_argument(name_ + ": peer " + address + " is not there");
    }
    present_[p] = false;
    peers_[p] = {};
    forget_peer(p);
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
    for (const Learned& e : kept) {
        uint32_t slot = slot_of(e.mac);
        for (uint32_t probe = 0; probe < 8; ++probe, slot = (slot + 1) % kVxlanMaxLearnedMacs) {
            if (learned_[slot].mac == 0) {
                learned_[slot] = e;
                break;
            }
        }
    }
}

std::vector<std::string> VxlanSocketPort::peers() const {
    std::vector<std::string> out;
    for (uint16_t p = 0; p < kVxlanMaxPeers; ++p) {
        if (present_[p]) {
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
    out.push_back({"vxlan", "learned_macs", uint64_t{learned_macs(steady_now_ns())}});
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
