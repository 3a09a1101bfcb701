// switch_core_bench: SwitchCore::classify alone (no rings, no copies) on
// 64-frame bursts whose source MACs cycle through N addresses, the way
// vnet-bench's switchscale sender does: what the MAC table costs per frame
// as it grows, measured without the machine's drift in the way (Google
// Benchmark repeats until the figure is stable).
//
//   switch_core_bench [--benchmark_filter=...] [--benchmark_repetitions=N]
//
// Each row is classify's time per frame for N learned sources; "one_flow"
// is a burst of one source (the run decision).
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <vector>

#include "dataplane/switch/switch_core.hpp"
#include "packet/packet_burst.hpp"
#include "virtio/net_header.hpp"

namespace {

using namespace vnet;
using dataplane::switching::BurstPlan;
using dataplane::switching::SwitchCore;
using dataplane::switching::SwitchOptions;

// switchscale's table: room for 10,000 sources.
constexpr uint32_t kTableSize = 16384;
constexpr size_t kFrameSize = 64;
constexpr uint8_t kReceiverMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// Frames from member 0 to the MAC member 1 announced, each with its own
// source, laid out the way a Linux guest's TX buffer is: the virtio-net
// header right before the frame, in one piece.
constexpr size_t kHeaderSize = sizeof(virtio::NetHeader);

struct Traffic {
    std::vector<std::array<uint8_t, kHeaderSize + kFrameSize>> frames;

    explicit Traffic(uint32_t sources) : frames(sources) {
        for (uint32_t i = 0; i < sources; ++i) {
            frames[i].fill(0);
            uint8_t* f = frames[i].data() + kHeaderSize;
            const uint8_t src[6] = {
                0x02, 0x00, 0x00, 0x10, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
            std::memcpy(f, kReceiverMac, 6);
            std::memcpy(f + 6, src, 6);
            f[12] = 0x08;
        }
    }

    // The next burst of frames, continuing the cycle at `next`.
    void fill(packet::PacketBurst& burst, size_t& next) {
        burst.clear();
        burst.header_size = kHeaderSize;
        while (!burst.full()) {
            burst.free_iovecs()[0] = {frames[next].data(), frames[next].size()};
            burst.push(1, static_cast<uint32_t>(frames[next].size()), 0);
            next = next + 1 == frames.size() ? 0 : next + 1;
        }
    }
};

void classify_sources(benchmark::State& state) {
    const auto sources = static_cast<uint32_t>(state.range(0));
    SwitchOptions options;
    options.mac_table_size = kTableSize;
    SwitchCore core(options);
    const uint16_t sender = core.add_member({});
    const uint16_t receiver = core.add_member({});
    Traffic traffic(sources);
    auto plan = std::make_unique<BurstPlan>();
    uint64_t now = 1;
    // The receiver announces itself first: frames to it go unicast, as in
    // switchscale.
    {
        Traffic announce(1);
        std::memcpy(announce.frames[0].data() + kHeaderSize, kBroadcast, 6);
        std::memcpy(announce.frames[0].data() + kHeaderSize + 6, kReceiverMac, 6);
        packet::PacketBurst burst;
        size_t first = 0;
        announce.fill(burst, first);
        core.classify(receiver, burst, now, *plan);
    }
    const uint64_t announced = core.counters().snapshot().flooded;

    // Bursts prepared ahead, so the loop times classify alone; enough of
    // them that every source is seen.
    const size_t bursts =
        std::max<size_t>(1, (sources + packet::kMaxBurstPackets - 1) / packet::kMaxBurstPackets);
    std::vector<packet::PacketBurst> prepared(bursts);
    size_t next = 0;
    for (auto& b : prepared) {
        traffic.fill(b, next);
    }
    // Steady state: every source learned before the timing starts.
    for (const auto& p : prepared) {
        core.classify(sender, p, now, *plan);
    }
    if (core.mac_table().size() < sources) {
        state.SkipWithError("the table holds fewer sources than the traffic has");
        return;
    }
    size_t b = 0;
    for (auto _ : state) {
        core.classify(sender, prepared[b], now, *plan);
        benchmark::DoNotOptimize(plan->group_count);
        b = b + 1 == bursts ? 0 : b + 1;
        now += 1000;
    }
    if (core.counters().snapshot().flooded != announced) {
        state.SkipWithError("frames to the receiver were flooded, not switched");
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * packet::kMaxBurstPackets);
}
BENCHMARK(classify_sources)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Arg(10000);

}  // namespace

BENCHMARK_MAIN();
