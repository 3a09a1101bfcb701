#include "dataplane/switch/switch_datapath.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "packet/byte_order.hpp"
#include "packet/iovec.hpp"
#include "packet/wire.hpp"
#include "virtio/net_header.hpp"

namespace vnet::dataplane::switching {

namespace {

// The destination's queue a switch hands frames to: queue pair 0, the one
// every guest runs (a multiqueue guest reads all its RX queues).
constexpr uint16_t kEgressQueue = 0;

// A frame whose tag changes also moves what its virtio-net header points
// into (virtio 1.2 §5.1.6.2: csum_start and hdr_len count from the frame's
// first byte), by the bytes the tag adds or takes away.
void shift_header_offsets(uint8_t* header, uint16_t header_size, int delta) {
    if (header_size < virtio::kLegacyNetHeaderSize || delta == 0) {
        return;
    }
    const uint8_t flags = header[virtio::kNetHeaderFlagsOffset];
    if ((flags & virtio::NetHeader::kFlagNeedsCsum) != 0) {
        uint8_t* p = header + virtio::kNetHeaderCsumStartOffset;
        packet::store_le16(p, static_cast<uint16_t>(packet::load_le16(p) + delta));
    }
    if ((header[virtio::kNetHeaderGsoTypeOffset] & ~virtio::NetHeader::kGsoEcn) !=
        virtio::NetHeader::kGsoNone) {
        uint8_t* p = header + virtio::kNetHeaderHdrLenOffset;
        packet::store_le16(p, static_cast<uint16_t>(packet::load_le16(p) + delta));
    }
}

// The frame leaves with the tag it came with, or with none as it came:
// its line is the verdict's prefix as it is.
bool leaves_as_it_came(EgressEntry entry, const PacketVerdict& v) {
    return entry.tagged ? v.tagged && (v.tci & kVlanIdMask) == v.vlan : !v.tagged;
}

}  // namespace

SwitchDatapath::SwitchDatapath(std::string name, const SwitchDatapathOptions& options)
    : name_(std::move(name)),
      options_(options),
      burst_(std::clamp<uint16_t>(options.queue_pair.tx_batch, 1, packet::kMaxBurstPackets)),
      weight_packets_(std::max<uint32_t>(options.queue_pair.weight_packets, 1)),
      core_(options.core) {
    pending_calls_.reserve(kMaxSwitchMembers);
}

SwitchDatapath::~SwitchDatapath() = default;

uint16_t SwitchDatapath::attach(ports::Port& port, MemberConfig config) {
    if (has_member(port)) {
        throw std::invalid_argument("port " + port.name() + " is on switch " + name_ + " already");
    }
    const ports::QueuePairCapabilities egress = port.capabilities(kEgressQueue);
    ports::BurstSink* sink = egress.burst_sink;
    if (sink == nullptr) {
        throw std::invalid_argument("port " + port.name() +
                                    " takes no bursts: it cannot be on a switch");
    }
    const uint16_t member = core_.add_member(std::move(config));
    members_[member] = Member{&port, sink, egress.rx_pacing};
    if (egress.rx_pacing != nullptr) {
        egress.rx_pacing->set_adaptive_rx(kEgressQueue, options_.queue_pair.adaptive_rx);
    }
    for (uint16_t q = 0; q < port.queue_count(); ++q) {
        if (ports::BurstSource* source = port.capabilities(q).burst_source) {
            auto in = std::make_unique<Ingress>();
            in->port = &port;
            in->queue = q;
            in->member = member;
            in->source = source;
            in->generation = port.queue_generation(q);
            in->burst_limit = burst_;
            ingress_.push_back(std::move(in));
        }
    }
    return member;
}

bool SwitchDatapath::has_member(const ports::Port& port) const {
    return std::any_of(members_.begin(), members_.end(),
                       [&](const Member& m) { return m.port == &port; });
}

const ports::Port* SwitchDatapath::member_port(uint16_t member) const {
    return member < members_.size() ? members_[member].port : nullptr;
}

uint32_t SwitchDatapath::forget_macs(const ports::Port* port) {
    MacTable& table = core_.mac_table();
    const uint32_t before = table.size();
    if (port == nullptr) {
        table.forget_all();
    }
    for (uint16_t m = 0; port != nullptr && m < members_.size(); ++m) {
        if (members_[m].port == port) {
            table.forget_member(m);
        }
    }
    return before - table.size();
}

bool SwitchDatapath::detach(const ports::Port& port) {
    auto it = std::find_if(members_.begin(), members_.end(),
                           [&](const Member& m) { return m.port == &port; });
    if (it == members_.end()) {
        return false;
    }
    const auto member = static_cast<uint16_t>(it - members_.begin());
    for (auto& in : ingress_) {
        if (in->member == member) {
            // Its own burst, held for a full destination: given back to it.
            if (in->burst.count != 0 && in->port->source_ready(in->queue)) {
                for (uint16_t g = 0; g < in->plan.group_count; ++g) {
                    drop_group(in->plan.groups[g], packet::DropReason::no_destination);
                }
                finish(*in);
            }
            continue;
        }
        if (in->holding) {
            for (uint16_t g = 0; g < in->plan.group_count; ++g) {
                if (in->plan.groups[g].member == member) {
                    drop_group(in->plan.groups[g], packet::DropReason::no_destination);
                }
            }
        }
    }
    std::erase_if(ingress_,
                  [&](const std::unique_ptr<Ingress>& in) { return in->member == member; });
    // A call it is owed is made now; off the switch, nothing defers them.
    std::erase(pending_calls_, member);
    if (it->pacing != nullptr) {
        it->pacing->set_adaptive_rx(kEgressQueue, false);
    }
    core_.remove_member(member);
    *it = Member{};
    return true;
}

TurnResult SwitchDatapath::run_turn(uint64_t now) {
    TurnResult total{0, 0, PathWait::source};
    for (auto& in : ingress_) {
        if (in->empty_polls >= kEmptyPollsBeforeIdle && now < in->next_poll_ns) {
            continue;  // an idle source; its last_wait (source) stands
        }
        // A source whose queue does not run (a guest that never enabled
        // its TX ring: a silent receiver) is told apart here, without the
        // call: a switch of many such ports looks at each of them often.
        TurnResult t{0, 0, PathWait::not_ready};
        if (in->port->source_ready(in->queue)) {
            t = ingress_turn(*in, now);
        }
        in->last_wait = t.wait;
        if (t.packets == 0 && (t.wait == PathWait::source || t.wait == PathWait::not_ready)) {
            in->empty_polls = static_cast<uint16_t>(
                std::min<uint32_t>(in->empty_polls + 1u, kEmptyPollsBeforeIdle));
            in->next_poll_ns = now + kIdlePollNs;
        } else {
            in->empty_polls = 0;
        }
        total.packets += t.packets;
        total.bytes += t.bytes;
        if (t.wait == PathWait::none) {
            total.wait = PathWait::none;
        } else if (t.wait == PathWait::destination && total.wait != PathWait::none) {
            total.wait = PathWait::holding;  // a burst held for a full destination
        }
    }
    if (!pending_calls_.empty()) {
        // No source ran out of budget: none has more right now, so nothing
        // is gained by letting the guests sleep on.
        make_deferred_calls(total.wait != PathWait::none, now);
    }
    return total;
}

void SwitchDatapath::make_deferred_calls(bool all, uint64_t now) {
    for (size_t i = 0; i < pending_calls_.size();) {
        Member& m = members_[pending_calls_[i]];
        const uint64_t due = m.pacing->rx_call_deadline(kEgressQueue);
        if (due != 0 && !all && now < due) {
            ++i;
            continue;
        }
        if (due != 0) {
            m.pacing->flush_rx_call(kEgressQueue);
        }
        m.call_pending = false;
        pending_calls_[i] = pending_calls_.back();
        pending_calls_.pop_back();
    }
}

TurnResult SwitchDatapath::ingress_turn(Ingress& in, uint64_t now) {
    TurnResult turn;
    const uint32_t generation = in.port->queue_generation(in.queue);
    if (generation != in.generation) {
        // The source restarted (a guest reconnected): what was held points
        // into buffers it already took back.
        in.burst.clear();
        in.holding = false;
        in.generation = generation;
    }
    if (in.holding) {
        if (!deliver(in, now, turn)) {
            if (now < in.hold_deadline) {
                // Retried next round: a bounded spin, in which the worker
                // lets a consumer on its own CPU run (Worker::run).
                turn.wait = PathWait::destination;
                return turn;
            }
            uint16_t dropped = 0;  // by the destination that took the fewest
            for (uint16_t g = 0; g < in.plan.group_count; ++g) {
                EgressGroup& group = in.plan.groups[g];
                Member& m = members_[group.member];
                if (group.count != 0 && m.refusing && now - m.refusing_since >= options_.stall_ns) {
                    m.stalled = true;
                }
                dropped = std::max(dropped, group.count);
                drop_group(group, packet::DropReason::destination_full);
            }
            in.burst_limit = static_cast<uint16_t>(std::max(1, in.burst.count - dropped));
        }
        finish(in);
    }
    while (turn.packets < weight_packets_) {
        const uint16_t got = in.source->receive_burst(in.queue, in.burst, in.burst_limit);
        if (got == 0) {
            turn.wait = PathWait::source;
            return turn;
        }
        core_.classify(in.member, in.burst, now, in.plan);
        if (!deliver(in, now, turn)) {
            in.holding = true;
            in.hold_deadline = now + options_.hold_ns;
            turn.wait = PathWait::destination;
            return turn;
        }
        if (got == in.burst_limit) {
            in.burst_limit = static_cast<uint16_t>(std::min<uint32_t>(uint32_t{got} * 2, burst_));
        }
        finish(in);
    }
    return turn;
}

bool SwitchDatapath::deliver(Ingress& in, uint64_t now, TurnResult& turn) {
    bool all = true;
    for (uint16_t g = 0; g < in.plan.group_count; ++g) {
        EgressGroup& group = in.plan.groups[g];
        if (group.count != 0) {
            all &= deliver_group(in, group, now, turn);
        }
    }
    return all;
}

bool SwitchDatapath::deliver_group(Ingress& in, EgressGroup& group, uint64_t now,
                                   TurnResult& turn) {
    Member& m = members_[group.member];
    if (!m.port->destination_ready(kEgressQueue)) {
        // A port that is down gets no copy. A frame is lost only when every
        // copy found its port down: a unicast frame's one copy, or a flood
        // whose other members were down too (a frame held for a guest that
        // then stopped its rings, with no other member); otherwise the
        // others got theirs.
        uint16_t lost = 0;
        for (uint16_t e = 0; e < group.count; ++e) {
            PacketVerdict& v = in.plan.packets[group.entries[e].packet];
            lost += ++v.copies_to_ports_down == v.copies ? 1 : 0;
        }
        core_.counters().count_drop(packet::DropReason::no_destination, lost);
        group.count = 0;
        return true;
    }
    while (group.count != 0) {
        // A destination that refused the last try is probed with one frame:
        // rebuilding a whole group every round of a hold cost a tenth of
        // the worker (64 KB GSO frames, a receiver ring of eight) and
        // made it see the guest's new buffers later.
        const uint16_t built = build_group(in, group, m.refusing ? 1 : group.count);
        uint16_t consumed = built;
        if (built == 0) {
            // Its iovecs and a tag line do not fit in one burst's pool.
            core_.counters().count_drop(packet::DropReason::too_many_segments);
            consumed = 1;
        } else if (out_.count != 0) {
            const uint16_t sent = m.sink->transmit_burst(kEgressQueue, out_);
            for (uint16_t i = 0; i < sent; ++i) {
                turn.bytes += out_.packets[i].len;
            }
            turn.packets += sent;
            if (sent != 0) {
                m.stalled = false;
                m.refusing = false;
                if (!m.call_pending && m.pacing != nullptr) {
                    m.call_pending = true;
                    pending_calls_.push_back(group.member);
                }
            }
            if (sent != out_.count && !m.refusing) {
                m.refusing = true;
                m.refusing_since = now;
            }
            consumed = sent == out_.count ? built : out_entry_[sent];
        }
        std::copy(group.entries.begin() + consumed, group.entries.begin() + group.count,
                  group.entries.begin());
        group.count = static_cast<uint16_t>(group.count - consumed);
        if (consumed < built) {
            if (m.stalled) {
                // It took nothing for stall_ns and a hold ran out on it (a
                // guest that stopped its RX ring): no hold again until it
                // takes a frame, so the source and its other destinations
                // do not wait hold_ns per burst, nor the worker spin.
                drop_group(group, packet::DropReason::destination_full);
                return true;
            }
            return false;  // full for now
        }
    }
    return true;
}

uint8_t* SwitchDatapath::retag_line(const PacketVerdict& v, uint16_t header, bool tagged,
                                    std::array<uint8_t, kLineSize>& line) {
    // The verdict's virtio-net header and MACs (a constant-size copy: what
    // it takes past them is overwritten or not sent), then the tag this
    // destination takes and the type after it.
    static_assert(kLineSize >= kMaxL2Prefix);
    std::memcpy(line.data(), v.prefix.data(), v.prefix.size());
    uint8_t* type = line.data() + header + packet::kEthTypeOffset;
    const uint32_t in_tag = v.tagged ? packet::kVlanTagLen : 0;
    const uint16_t ethertype = packet::load_be16(type + in_tag);
    if (tagged) {
        packet::store_be16(type, packet::kEtherTypeVlan);
        // A priority tag keeps its priority; an added tag has none.
        const uint16_t pcp = v.tagged ? static_cast<uint16_t>(v.tci & ~kVlanIdMask) : 0;
        packet::store_be16(type + 2, static_cast<uint16_t>(pcp | v.vlan));
        type += packet::kVlanTagLen;
    }
    packet::store_be16(type, ethertype);
    const uint32_t out_tag = tagged ? packet::kVlanTagLen : 0;
    shift_header_offsets(line.data(), header, static_cast<int>(out_tag) - static_cast<int>(in_tag));
    return line.data();
}

uint16_t SwitchDatapath::build_group(Ingress& in, const EgressGroup& group, uint16_t limit) {
    out_.clear();
    out_.header_size = in.burst.header_size;
    const uint16_t end = std::min(group.count, limit);
    uint16_t e = 0;
    while (true) {
        e = build_plain_run(in, group, e, end);
        if (e == end || !build_entry(in, group.entries[e], e)) {
            return e;
        }
        ++e;
    }
}

uint16_t SwitchDatapath::build_plain_run(Ingress& in, const EgressGroup& group, uint16_t from,
                                         uint16_t end) {
    // Everything the loop reads and counts, in locals: its stores into out_
    // could alias them, and with a call in the loop (build_entry's cases)
    // the compiler kept them on the stack, reloaded for every frame.
    const uint16_t header = in.burst.header_size;
    const EgressEntry* entries = group.entries.data();
    const packet::BurstPacket* packets = in.burst.packets.data();
    const iovec* iovecs = in.burst.iovecs.data();
    PacketVerdict* verdicts = in.plan.packets.data();
    iovec* out_iovecs = out_.iovecs.data();
    uint16_t count = out_.count;
    uint16_t used = out_.iovecs_used;
    uint16_t e = from;
    for (; e < end; ++e) {
        const EgressEntry entry = entries[e];
        const packet::BurstPacket& p = packets[entry.packet];
        PacketVerdict& v = verdicts[entry.packet];
        // The verdict's prefix is its line, the same length as it came.
        if (!leaves_as_it_came(entry, v) || p.iov_count == 0 ||
            used > packet::kMaxBurstIovecs - 2) {
            break;
        }
        // classify checked p.len >= line; the payload after the line must
        // lie in the first piece, non-empty (slice_iovecs' inline case).
        const iovec& first = iovecs[p.first_iov];
        const uint32_t line = header + packet::kEthHeaderLen + (v.tagged ? packet::kVlanTagLen : 0);
        const uint32_t rest = p.len - line;
        if (rest == 0 || rest > first.iov_len || line > first.iov_len - rest) {
            break;
        }
        out_iovecs[used] = iovec{v.prefix.data(), line};
        out_iovecs[used + 1] = iovec{static_cast<uint8_t*>(first.iov_base) + line, rest};
        out_entry_[count] = e;
        out_.packets[count] = packet::BurstPacket{used, 2, p.len, p.token};
        ++count;
        used = static_cast<uint16_t>(used + 2);
    }
    out_.count = count;
    out_.iovecs_used = used;
    return e;
}

bool SwitchDatapath::build_entry(Ingress& in, EgressEntry entry, uint16_t e) {
    const uint16_t header = in.burst.header_size;
    const packet::BurstPacket& p = in.burst.packets[entry.packet];
    const PacketVerdict& v = in.plan.packets[entry.packet];
    const std::span<const iovec> iov = in.burst.packet_iovecs(entry.packet);
    std::span<iovec> room = out_.free_iovecs();
    if (room.size() < 2) {
        return false;  // the rest goes in the next burst
    }
    // One line per frame: its virtio-net header and Ethernet header as
    // classified (the parser's copy), tagged as this destination takes
    // it; the payload stays where it is.
    const uint32_t in_tag = v.tagged ? packet::kVlanTagLen : 0;
    const uint32_t out_tag = entry.tagged ? packet::kVlanTagLen : 0;
    const uint32_t cut = header + packet::kEthHeaderLen + in_tag;  // classify checked p.len >= cut
    // A frame that leaves as it came is sent from its verdict as it is:
    // no line to write.
    uint8_t* line = leaves_as_it_came(entry, v)
                        ? in.plan.packets[entry.packet].prefix.data()
                        : retag_line(v, header, entry.tagged, scratch_[out_.count]);
    room[0] = iovec{line, header + packet::kEthHeaderLen + out_tag};
    const int rest = packet::slice_iovecs(iov, cut, p.len - cut, room.subspan(1));
    if (rest < 0) {
        if (packet::total_length(iov) < p.len) {
            // A chain shorter than its length (the source should not
            // hand one out): counted, never sent.
            core_.counters().count_drop(packet::DropReason::packet_too_short);
            return true;
        }
        return false;  // out of iovecs: the rest goes in the next burst
    }
    out_entry_[out_.count] = e;
    out_.push(static_cast<uint16_t>(1 + rest), p.len - in_tag + out_tag, p.token);
    return true;
}

void SwitchDatapath::drop_group(EgressGroup& group, packet::DropReason reason) {
    if (group.count == 0) {
        return;
    }
    core_.counters().count_drop(reason, group.count);
    if (const Member& m = members_[group.member]; m.port != nullptr) {
        m.port->tx_counters(kEgressQueue).count_drop(reason, group.count);
    }
    group.count = 0;
}

void SwitchDatapath::finish(Ingress& in) {
    in.source->complete_burst(in.queue, in.burst, in.burst.count);
    in.burst.clear();
    in.holding = false;
}

bool SwitchDatapath::prepare_sleep(const Want& want) {
    make_deferred_calls(true, 0);  // no guest sleeps on a call we owe it
    for (auto& in : ingress_) {
        if (in->holding || in->last_wait == PathWait::none) {
            return false;
        }
        if (in->last_wait == PathWait::source) {
            if (!in->port->arm_receive_wait(in->queue)) {
                return false;
            }
            want(in->port->receive_wait(in->queue));
        }
    }
    return true;
}

void SwitchDatapath::on_guest_fault(uintptr_t address) {
    for (uint16_t member : pending_calls_) {
        members_[member].call_pending = false;  // each port's queue restarts or stops
    }
    pending_calls_.clear();
    for (auto& in : ingress_) {
        in->burst.clear();
        in->holding = false;
    }
    for (const Member& m : members_) {
        if (m.port != nullptr) {
            for (uint16_t q = 0; q < m.port->queue_count(); ++q) {
                m.port->on_guest_fault(q, address);
            }
        }
    }
}

}  // namespace vnet::dataplane::switching
