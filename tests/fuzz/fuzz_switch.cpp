// libFuzzer target: the L2 switch's parser, classifier and burst builder
// over hostile frames. Must never crash or read outside what a source
// handed out (ASan); every packet of a burst is completed to its source and
// either forwarded or counted as a drop; the MAC table never holds more than
// its bound.
//
// Input layout:
//   [0]  bits 0-1 the ingress member of the first burst, bit 2 10-byte header
//   then up to 64 packets, each:
//   [0]  bits 0-1 ingress member (a new burst starts when it changes),
//        bits 2-4 iovec cuts, bit 5 lie in len (next byte: delta), bit 7 sink full
//   [1]  byte count (at most 255), then the delta, the cuts, the bytes.
// Members: 0 access VLAN 1, 1 trunk {1, 2} with no native VLAN, 2 access
// VLAN 2 with one allowed MAC, 3 trunk {2} native 1.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "dataplane/switch/switch_datapath.hpp"
#include "fuzz_check.hpp"
#include "packet/iovec.hpp"

using namespace vnet;
using namespace vnet::dataplane::switching;

namespace {

constexpr uint64_t kFuzzClockStepNs = 1000;
uint64_t g_now = 0;
uint64_t fuzz_clock() {
    return g_now += kFuzzClockStepNs;
}

class FuzzPort : public ports::Port, public ports::BurstSource, public ports::BurstSink {
public:
    FuzzPort() : Port("fuzz") {}
    ports::QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this};
    }
    bool queue_ready(uint16_t) const override { return true; }
    uint16_t receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t) override {
        if (next == nullptr) {
            return 0;
        }
        burst.header_size = next->header_size;
        for (uint16_t i = 0; i < next->count; ++i) {
            std::span<const iovec> iov = next->packet_iovecs(i);
            std::copy(iov.begin(), iov.end(), burst.free_iovecs().begin());
            burst.push(next->packets[i].iov_count, next->packets[i].len, i);
        }
        next = nullptr;
        return burst.count;
    }
    void complete_burst(uint16_t, const packet::PacketBurst&, uint16_t done) override {
        completed += done;
    }
    uint16_t transmit_burst(uint16_t, const packet::PacketBurst& burst) override {
        uint16_t n = full ? static_cast<uint16_t>(burst.count / 2) : burst.count;
        for (uint16_t i = 0; i < n; ++i) {
            // Touch every byte the switch points at (ASan: all inside
            // what the source handed out, or the switch's own tag lines).
            std::span<const iovec> iov = burst.packet_iovecs(i);
            std::vector<uint8_t> bytes(packet::total_length(iov));
            const iovec into{bytes.data(), bytes.size()};
            FUZZ_CHECK(packet::copy_iovecs({&into, 1}, iov, bytes.size()) == bytes.size());
        }
        received += n;
        return n;
    }
    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    const packet::PacketBurst* next = nullptr;
    uint64_t completed = 0;
    uint64_t received = 0;
    bool full = false;
    packet::QueueCounters rx, tx;
};

MemberConfig member(int i) {
    MemberConfig c;
    switch (i) {
        case 1:
            c.vlans.untagged.reset();
            c.vlans.tagged.set(1);
            c.vlans.tagged.set(2);
            break;
        case 2:
            c.vlans.untagged = 2;
            c.allowed_macs = {{0x02, 0, 0, 0, 0, 2}};
            break;
        case 3:
            c.vlans.tagged.set(2);
            break;
        default:
            break;
    }
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    SwitchDatapathOptions o;
    o.core.mac_table_size = 4;
    o.hold_ns = 0;  // a full destination drops at once: one turn per burst
    SwitchDatapath sw("fuzz", o);
    std::array<FuzzPort, 4> ports;
    for (int i = 0; i < 4; ++i) {
        sw.attach(ports[i], member(i));
    }
    const uint16_t header = (data[0] & 4) != 0 ? 10 : 12;
    size_t pos = 1;
    std::deque<std::vector<uint8_t>> storage;
    packet::PacketBurst burst;
    int ingress = data[0] & 3;

    auto run = [&] {
        if (burst.count == 0) {
            return;
        }
        burst.header_size = header;
        const auto before = sw.core().counters().snapshot();
        uint64_t received_before = 0;
        for (FuzzPort& p : ports) {
            received_before += p.received;
        }
        const uint64_t completed_before = ports[ingress].completed;
        ports[ingress].next = &burst;
        // A source found empty kEmptyPollsBeforeIdle turns in a row is
        // looked at once per kIdlePollNs: turn until it is read, and fail
        // if that takes longer than one idle period of the fuzz clock.
        for (uint64_t turns = 0; ports[ingress].next != nullptr; ++turns) {
            FUZZ_CHECK(turns <= kIdlePollNs / kFuzzClockStepNs + 1);
            sw.run_turn(fuzz_clock());
        }
        sw.run_turn(fuzz_clock());  // the hold (0 ns) ends: what a full port refused is dropped
        FUZZ_CHECK(ports[ingress].completed == completed_before + burst.count);
        FUZZ_CHECK(sw.core().mac_table().size() <= 4);
        const auto after = sw.core().counters().snapshot();
        uint64_t received = 0;
        for (FuzzPort& p : ports) {
            received += p.received;
        }
        // Nothing vanishes: every copy was received or counted as a drop,
        // and a packet without copies was counted too.
        uint64_t drops = 0;
        for (size_t r = 0; r < after.drops.size(); ++r) {
            drops += after.drops[r] - before.drops[r];
        }
        FUZZ_CHECK(received - received_before + drops >= burst.count || burst.count == 0);
        burst.clear();
        storage.clear();
    };

    while (pos + 2 <= size && burst.count < packet::kMaxBurstPackets) {
        const uint8_t flags = data[pos];
        size_t n = data[pos + 1];
        pos += 2;
        const int next_ingress = flags & 3;
        if (next_ingress != ingress) {
            run();
            ingress = next_ingress;
        }
        int delta = 0;
        if ((flags & 0x20) != 0 && pos < size) {
            delta = static_cast<int8_t>(data[pos++]);
        }
        const size_t cuts = (flags >> 2) & 7;
        std::vector<size_t> at;
        for (size_t c = 0; c < cuts && pos < size; ++c) {
            at.push_back(data[pos++] % (n + 1));
        }
        n = std::min(n, size - pos);
        storage.emplace_back(data + pos, data + pos + n);
        pos += n;
        ports[(ingress + 1) % 4].full = (flags & 0x80) != 0;
        std::vector<uint8_t>& bytes = storage.back();
        for (size_t& cut : at) {
            cut = std::min(cut, n);  // the input may end before the bytes it announced
        }
        std::sort(at.begin(), at.end());
        std::span<iovec> room = burst.free_iovecs();
        uint16_t iovs = 0;
        size_t start = 0;
        at.push_back(n);
        for (size_t cut : at) {
            if (cut > start && iovs < room.size()) {
                room[iovs++] = iovec{bytes.data() + start, cut - start};
                start = cut;
            }
        }
        const int64_t len = static_cast<int64_t>(n) + delta;
        burst.push(iovs, static_cast<uint32_t>(len < 0 ? 0 : len), 0);
    }
    run();
    return 0;
}
