// Property tests: seeded random TX bursts (IPv4/IPv6, TCP/UDP, several
// flows interleaved, random MSS, short and PSH segments, pure ACKs, gaps,
// header changes, iovec splits anywhere, 10- and 12-byte virtio headers).
// Structured bursts must merge exactly as a small model of the rules says;
// byte-mutated bursts must keep every invariant. A failure prints its seed;
// VNET_GRO_SEED=<seed> reruns just that one, VNET_GRO_ITERATIONS=<n> soaks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "coalesce_checks.hpp"
#include "gro/burst_coalescer.hpp"
#include "segment_factory.hpp"

namespace vnet::gro::testing {
namespace {

constexpr uint64_t kBaseSeed = 0x67726f;  // "gro"
constexpr int kIterations = 1000;

class Rng {
public:
    explicit Rng(uint64_t seed) : gen_(seed) {}
    size_t below(size_t n) {
        return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(gen_);
    }
    size_t between(size_t lo, size_t hi) { return lo + below(hi - lo + 1); }
    bool chance(double p) { return std::bernoulli_distribution(p)(gen_); }

private:
    std::mt19937_64 gen_;
};

// What the merge rules predict for a generated burst: the source packets of
// each frame. It knows what the generator did to each packet, so it needs no
// parsing: a packet joins the open run iff it is clean, of the run's flow,
// continues it (no gap or header change), is no longer than the head and
// keeps the IP length within 65535.
class FrameModel {
public:
    void add(size_t flow, bool clean, bool continues, size_t payload, bool push,
             size_t ip_overhead) {
        const bool joins = count_ > 0 && clean && flow == flow_ && continues &&
                           payload <= head_payload_ && ip_overhead + total_ + payload <= 65535;
        if (joins) {
            ++count_;
            total_ += payload;
            if (payload < head_payload_ || push) {
                close();
            }
            return;
        }
        close();
        if (!clean) {
            frames_.push_back(1);
            return;
        }
        flow_ = flow;
        count_ = 1;
        head_payload_ = total_ = payload;
        if (push) {
            close();
        }
    }
    std::vector<uint16_t> finish() {
        close();
        return frames_;
    }

private:
    void close() {
        if (count_ > 0) {
            frames_.push_back(count_);
        }
        count_ = 0;
    }
    std::vector<uint16_t> frames_;
    size_t flow_ = 0;
    uint16_t count_ = 0;
    size_t head_payload_ = 0;
    size_t total_ = 0;
};

struct Flow {
    SegmentSpec spec;
    size_t mss = 0;
};

size_t pick_mss(Rng& rng) {
    switch (rng.below(6)) {
        case 0:
            return rng.between(1, 64);
        case 1:
            return 1448;
        case 2:
            return 1460;
        case 3:
            return rng.chance(0.5) ? 8948 : rng.between(2000, 9000);
        default:
            return rng.between(1, 1500);
    }
}

Flow make_flow(Rng& rng, size_t index, uint8_t vnet_len) {
    Flow f;
    SegmentSpec& s = f.spec;
    s.vnet_len = vnet_len;
    s.ipv6 = rng.chance(0.4);
    s.udp = rng.chance(0.3);
    s.data_valid = rng.chance(0.25);
    s.num_buffers = vnet_len == 12 && rng.chance(0.3) ? 1 : 0;
    s.addr_tag = static_cast<uint8_t>(1 + rng.below(2));
    s.src_port = static_cast<uint16_t>(40000 + index);
    s.seq = static_cast<uint32_t>(rng.below(1ull << 32));
    s.ack = static_cast<uint32_t>(rng.below(1ull << 32));
    s.ip_id = static_cast<uint16_t>(rng.below(65536));
    s.dont_fragment = rng.chance(0.8);
    if (!s.udp && rng.chance(0.5)) {
        s.tcp_options = timestamp_options(static_cast<uint32_t>(rng.below(1u << 31)), 7);
    }
    f.mss = pick_mss(rng);
    return f;
}

std::vector<size_t> random_splits(Rng& rng, size_t size) {
    std::vector<size_t> splits;
    const size_t n = rng.below(5);
    for (size_t i = 0; i < n; ++i) {
        // Half of the cuts land in the first 130 bytes: inside the headers.
        splits.push_back(rng.chance(0.5) ? rng.below(std::min<size_t>(size, 130) + 1)
                                         : rng.below(size + 1));
    }
    return splits;
}

struct Generated {
    TestBurst in;
    uint8_t vnet_len = 12;
    CoalesceOptions options;
    std::vector<uint16_t> expected;
};

// Builds one burst. With `mutate`, some packets then get random header
// bytes or a lying len, which the model cannot predict (expected is empty).
void generate(uint64_t seed, bool mutate, Generated& g) {
    Rng rng(seed);
    g.vnet_len = rng.chance(0.5) ? 12 : 10;
    g.options.tcp = rng.chance(0.9);
    g.options.udp = rng.chance(0.7);
    std::vector<Flow> flows;
    const size_t nflows = rng.between(1, 3);
    for (size_t i = 0; i < nflows; ++i) {
        flows.push_back(make_flow(rng, i, g.vnet_len));
    }
    const double p_switch = std::array{0.0, 0.05, 0.3, 0.8}[rng.below(4)];
    const double p_event = std::array{0.0, 0.03, 0.15}[rng.below(3)];
    const size_t npackets = rng.between(1, packet::kMaxBurstPackets);
    FrameModel model;
    size_t current = 0;
    for (size_t i = 0; i < npackets; ++i) {
        if (rng.chance(p_switch)) {
            current = rng.below(flows.size());
        }
        Flow& flow = flows[current];
        SegmentSpec spec = flow.spec;
        const bool tcp = !spec.udp;
        spec.payload_len = flow.mss;
        bool continues = true;
        bool push = false;
        bool fin = false;
        if (rng.chance(p_event)) {
            switch (rng.below(10)) {
                case 0:
                    spec.payload_len = 0;
                    break;  // a pure ACK (or an empty datagram)
                case 1:
                    spec.payload_len = rng.between(1, std::max<size_t>(flow.mss, 2) - 1);
                    break;
                case 2:
                    spec.payload_len = flow.mss + rng.between(1, 100);
                    break;
                case 3:
                    if (tcp) {
                        spec.tcp_flags |= kTcpPshFlag;
                        push = true;
                    }
                    break;
                case 4:
                    if (tcp) {
                        spec.seq = flow.spec.seq += static_cast<uint32_t>(rng.between(1, 5000));
                        continues = false;
                    }
                    break;
                case 5:
                    if (!spec.ipv6) {
                        spec.ip_id = flow.spec.ip_id += static_cast<uint16_t>(rng.between(1, 10));
                        continues = false;
                    }
                    break;
                case 6:
                    if (tcp) {
                        spec.window = ++flow.spec.window;
                        continues = false;
                    }
                    break;
                case 7:
                    spec.tos = flow.spec.tos = static_cast<uint8_t>(flow.spec.tos + 4);
                    continues = false;
                    break;
                case 8:
                    if (tcp && rng.chance(0.3)) {
                        spec.tcp_flags |= 0x01;
                        fin = true;
                    }
                    break;
                default:
                    spec.hdr_len_hint = static_cast<uint16_t>(rng.below(200));
                    spec.gso_size_hint = static_cast<uint16_t>(rng.below(9000));
                    break;
            }
        }
        spec.payload_seed = static_cast<uint32_t>(rng.below(1u << 31));
        Bytes bytes = build_segment(spec);
        flow.spec.seq += static_cast<uint32_t>(spec.payload_len);
        ++flow.spec.ip_id;

        const bool enabled = tcp ? g.options.tcp : g.options.udp;
        const size_t l4_header = tcp ? 20 + spec.tcp_options.size() : 8;
        model.add(current, enabled && spec.payload_len > 0 && !fin, continues, spec.payload_len,
                  push, (spec.ipv6 ? 40 : 20) + l4_header);

        uint32_t len = static_cast<uint32_t>(bytes.size());
        if (mutate && rng.chance(0.2)) {
            const size_t flips = rng.between(1, 3);
            for (size_t k = 0; k < flips && !bytes.empty(); ++k) {
                bytes[rng.below(std::min<size_t>(bytes.size(), 130))] =
                    static_cast<uint8_t>(rng.below(256));
            }
        }
        if (mutate && rng.chance(0.05)) {
            len = static_cast<uint32_t>(len + rng.between(0, 6) - 3);
        }
        if (mutate && rng.chance(0.05)) {
            bytes.resize(rng.below(bytes.size()));
            len = static_cast<uint32_t>(bytes.size());
        }
        g.in.add_with_len(bytes, random_splits(rng, bytes.size()), static_cast<uint32_t>(i), len);
    }
    if (!mutate) {
        g.expected = model.finish();
    }
}

uint64_t seed_for(int iteration) {
    if (const char* env = std::getenv("VNET_GRO_SEED")) {
        return std::strtoull(env, nullptr, 0);
    }
    return kBaseSeed + static_cast<uint64_t>(iteration);
}

int iterations() {
    if (std::getenv("VNET_GRO_SEED")) {
        return 1;
    }
    const char* env = std::getenv("VNET_GRO_ITERATIONS");  // for longer soak runs
    return env ? std::atoi(env) : kIterations;
}

void run_property(bool mutate) {
    auto out = std::make_unique<packet::PacketBurst>();
    auto coalescer = std::make_unique<BurstCoalescer>();
    uint64_t merged = 0;
    for (int it = 0; it < iterations(); ++it) {
        const uint64_t seed = seed_for(it);
        Generated g;
        generate(seed, mutate, g);
        const CoalesceResult r = coalescer->coalesce(g.in.burst(), g.vnet_len, g.options, *out);
        const std::string err = check_coalesced(g.in, g.vnet_len, *coalescer, r, *out);
        ASSERT_EQ(err, "") << "seed " << seed << " (VNET_GRO_SEED=" << seed << ")";
        if (!mutate) {
            ASSERT_EQ(frame_sizes(*coalescer, r), g.expected)
                << "seed " << seed << " (VNET_GRO_SEED=" << seed << ")";
        }
        merged += r.merged_frames;
    }
    // The generator must actually exercise merging, not just pass-through.
    if (iterations() > 1) {
        EXPECT_GT(merged, static_cast<uint64_t>(iterations()));
    }
}

TEST(GroProperty, structured_bursts_merge_exactly_as_the_rules_say_and_resegment_byte_for_byte) {
    run_property(false);
}

TEST(GroProperty, mutated_bursts_keep_coverage_identity_and_resegmentation) {
    run_property(true);
}

}  // namespace
}  // namespace vnet::gro::testing
