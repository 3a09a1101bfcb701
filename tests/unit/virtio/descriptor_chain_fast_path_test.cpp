// The one- and two-descriptor fast path of walk_descriptor_chain: its
// edges, and a differential test against a reference walker (the plain
// loop the walker was before the fast path) over random small rings, so
// that every shape gives the same error, iovecs, chain and region hint.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>

#include "unit/virtio/chain_test_layout.hpp"
#include "unit/virtio/test_ring.hpp"
#include "virtio/ring/descriptor_chain.hpp"

namespace vnet::virtio {
namespace {

using test::GuestSplitRing;
using test::TestGuestMemory;
using namespace test::chain_layout;

struct Guest {
    explicit Guest(uint16_t queue_size = 8) : ring(mem, kRing, queue_size) {}

    PopStatus walk(uint16_t head, size_t out_size = 16, size_t* h = nullptr) {
        return walk_descriptor_chain(ring.walk_context(true, h == nullptr ? &hint : h), head,
                                     std::span<iovec>(iov.data(), out_size), chain);
    }

    TestGuestMemory mem;
    uint8_t* low = mem.add_region(kRing, kLowEnd - kRing);
    uint8_t* high = mem.add_region(kHigh, 0x1000);
    uint8_t* far = mem.add_region(kFar, 0x1000);
    GuestSplitRing ring;
    size_t hint = 0;
    std::array<iovec, 16> iov{};
    DescriptorChain chain;
};

// ---- edges of the fast path ----------------------------------------------------

TEST(DescriptorChainFastPath, a_one_entry_ring_whose_descriptor_chains_to_itself_is_a_loop) {
    Guest g(1);
    g.ring.set_desc(0, kBuf, 8, N, 0);
    EXPECT_EQ(g.walk(0), PopStatus::chain_loop);
}

TEST(DescriptorChainFastPath, a_two_entry_ring_looping_back_to_the_head_is_a_loop) {
    Guest g(2);
    g.ring.set_desc(0, kBuf, 8, N, 1);
    g.ring.set_desc(1, kBuf, 8, N, 0);
    EXPECT_EQ(g.walk(0), PopStatus::chain_loop);
}

TEST(DescriptorChainFastPath, walks_the_two_descriptors_of_a_two_entry_ring) {
    Guest g(2);
    g.ring.set_desc(1, kBuf, 12, N, 0);
    g.ring.set_desc(0, kBuf + 0x100, 60);
    ASSERT_EQ(g.walk(1), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 2);
    EXPECT_EQ(g.chain.readable_bytes, 72u);
    EXPECT_EQ(g.iov[0].iov_base, g.mem.host(kBuf));
    EXPECT_EQ(g.iov[1].iov_base, g.mem.host(kBuf + 0x100));
}

TEST(DescriptorChainFastPath, a_second_descriptor_with_next_continues_the_walk) {
    Guest g;
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kBuf + 0x100, 20, N, 2);
    g.ring.set_desc(2, kBuf + 0x200, 30);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 3);
    EXPECT_EQ(g.chain.readable_bytes, 62u);
}

TEST(DescriptorChainFastPath, a_second_descriptor_out_of_range_after_the_first) {
    Guest g(4);
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kBuf, 12, N, 4);
    EXPECT_EQ(g.walk(0), PopStatus::next_out_of_range);
}

TEST(DescriptorChainFastPath, a_second_descriptor_that_is_an_indirect_table) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf + 0x100, 20, 0, 0}});
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kTable, 16, I);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 2);
    EXPECT_EQ(g.chain.readable_bytes, 32u);
}

TEST(DescriptorChainFastPath, a_readable_second_descriptor_after_a_writable_first) {
    Guest g;
    g.ring.set_desc(0, kBuf, 12, W | N, 1);
    g.ring.set_desc(1, kBuf + 0x100, 20);
    EXPECT_EQ(g.walk(0), PopStatus::readable_after_writable);
}

TEST(DescriptorChainFastPath, a_writable_second_descriptor_after_a_readable_first) {
    Guest g;
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kBuf + 0x100, 20, W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 1);
    EXPECT_EQ(g.chain.writable_segments, 1);
    EXPECT_EQ(g.chain.readable_bytes, 12u);
    EXPECT_EQ(g.chain.writable_bytes, 20u);
}

TEST(DescriptorChainFastPath, a_buffer_outside_the_hinted_region_is_found_and_hinted) {
    Guest g;
    g.hint = 0;
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kFar + 0x10, 20);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.iov[1].iov_base, g.far + 0x10);
    EXPECT_EQ(g.hint, 2u);
}

TEST(DescriptorChainFastPath, a_buffer_running_out_of_the_hinted_region_is_split) {
    Guest g;
    g.hint = 0;
    g.ring.set_desc(0, kLowEnd - 0x10, 0x30);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 2);
    EXPECT_EQ(g.iov[0].iov_len, 0x10u);
    EXPECT_EQ(g.iov[1].iov_base, g.high);
    EXPECT_EQ(g.iov[1].iov_len, 0x20u);
}

TEST(DescriptorChainFastPath, a_stale_hint_past_the_regions_is_not_used) {
    Guest g;
    g.hint = 99;
    g.ring.set_desc(0, kHigh + 8, 8);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.iov[0].iov_base, g.high + 8);
    EXPECT_EQ(g.hint, 1u);
}

TEST(DescriptorChainFastPath, works_without_a_hint) {
    Guest g;
    g.ring.set_desc(0, kFar, 8);
    ChainWalkContext ctx = g.ring.walk_context(true, nullptr);
    ASSERT_EQ(walk_descriptor_chain(ctx, 0, g.iov, g.chain), PopStatus::ok);
    EXPECT_EQ(g.iov[0].iov_base, g.far);
}

TEST(DescriptorChainFastPath, a_hinted_buffer_with_no_iovec_left) {
    Guest g;
    g.ring.set_desc(0, kBuf, 12, N, 1);
    g.ring.set_desc(1, kBuf + 0x100, 20);
    EXPECT_EQ(g.walk(0, 1), PopStatus::too_many_segments);
    EXPECT_EQ(g.walk(0, 0), PopStatus::too_many_segments);
}

TEST(DescriptorChainFastPath, zero_length_descriptors_need_no_iovec_and_no_mapping) {
    Guest g;
    g.ring.set_desc(0, kUnmapped, 0, N, 1);
    g.ring.set_desc(1, kUnmapped, 0);
    ASSERT_EQ(g.walk(0, 0), PopStatus::ok);
    EXPECT_EQ(g.chain.segment_count(), 0u);
    EXPECT_EQ(g.chain.readable_bytes, 0u);
}

TEST(DescriptorChainFastPath, an_unmapped_first_buffer_fails_before_the_second_is_read) {
    Guest g(4);
    g.ring.set_desc(0, kUnmapped, 8, N, 9);  // next out of range: not reached
    EXPECT_EQ(g.walk(0), PopStatus::buffer_unmapped);
}

// ---- differential: the fast path against the plain loop ------------------------

// The walker as a plain loop over the rules (the shape it had before the
// fast path), reading each descriptor once with memcpy (the test owns the
// memory; no other thread writes it).
PopStatus reference_walk(const ChainWalkContext& ctx, uint16_t head, std::span<iovec> out,
                         DescriptorChain& chain) {
    if (head >= ctx.queue_size) {
        return PopStatus::head_out_of_range;
    }
    out = out.first(std::min<size_t>(out.size(), UINT16_MAX));
    const VirtqDesc* table = ctx.desc_table;
    uint32_t table_size = ctx.queue_size;
    bool in_indirect = false;
    size_t segments = 0;
    uint64_t total = 0;
    size_t readable_segments = 0;
    uint64_t readable_bytes = 0;
    bool seen_writable = false;
    uint32_t index = head;
    uint32_t visited = 0;
    for (;;) {
        if (++visited > table_size) {
            return PopStatus::chain_loop;
        }
        VirtqDesc d;
        std::memcpy(&d, &table[index], sizeof d);
        if ((d.flags & I) != 0) {
            if (!ctx.indirect_allowed) {
                return PopStatus::indirect_not_negotiated;
            }
            if (in_indirect) {
                return PopStatus::indirect_nested;
            }
            if ((d.flags & N) != 0) {
                return PopStatus::indirect_with_next;
            }
            if (d.len == 0 || d.len % sizeof(VirtqDesc) != 0) {
                return PopStatus::indirect_bad_length;
            }
            const uint32_t entries = d.len / sizeof(VirtqDesc);
            if (entries > ctx.queue_size || entries > 65536) {
                return PopStatus::indirect_too_large;
            }
            const uint8_t* host = ctx.memory->gpa_to_host(d.addr, d.len, ctx.region_hint);
            if (host == nullptr) {
                return PopStatus::indirect_table_unmapped;
            }
            table = reinterpret_cast<const VirtqDesc*>(host);
            table_size = entries;
            in_indirect = true;
            index = 0;
            visited = 0;
            continue;
        }
        const bool writable = (d.flags & W) != 0;
        if (!writable && seen_writable) {
            return PopStatus::readable_after_writable;
        }
        if (writable && !seen_writable) {
            seen_writable = true;
            readable_segments = segments;
            readable_bytes = total;
        }
        total += d.len;
        if (total > UINT32_MAX) {
            return PopStatus::total_length_overflow;
        }
        if (!ctx.memory->gpa_to_iovecs(d.addr, d.len, out, &segments, ctx.region_hint)) {
            // Unmapped somewhere, or out of iovecs.
            uint64_t gpa = d.addr;
            uint64_t len = d.len;
            if (gpa + len < gpa) {
                return PopStatus::buffer_unmapped;
            }
            while (len > 0) {
                const GuestRegion* r = ctx.memory->find_gpa(gpa);
                if (r == nullptr) {
                    return PopStatus::buffer_unmapped;
                }
                const uint64_t piece = std::min(len, r->gpa_end() - gpa);
                gpa += piece;
                len -= piece;
            }
            return PopStatus::too_many_segments;
        }
        if ((d.flags & N) == 0) {
            break;
        }
        index = d.next;
        if (index >= table_size) {
            return PopStatus::next_out_of_range;
        }
    }
    if (!seen_writable) {
        readable_segments = segments;
        readable_bytes = total;
    }
    chain.head = head;
    chain.readable_segments = static_cast<uint16_t>(readable_segments);
    chain.writable_segments = static_cast<uint16_t>(segments - readable_segments);
    chain.readable_bytes = static_cast<uint32_t>(readable_bytes);
    chain.writable_bytes = static_cast<uint32_t>(total - readable_bytes);
    return PopStatus::ok;
}

TEST(DescriptorChainFastPath, gives_what_the_plain_loop_gives_on_random_small_rings) {
    std::mt19937 rng(20261201);
    const uint64_t addrs[] = {kBuf,   kBuf + 0x40,   kLowEnd - 0x10, kHigh + 0xff0,
                              kFar,   kFar + 0xffc,  kUnmapped,      UINT64_MAX - 4,
                              kTable, kTable + 0x10, kTable + 3,     kHigh};
    const uint32_t lens[] = {0, 1, 12, 16, 32, 48, 64, 0x30, 0x1000, 0xffff'ffff};
    const uint16_t flag_sets[] = {0, N, W, N | W, I, I | N, I | W, 0, N, N};
    std::array<DescriptorChain, 2> chains;
    std::array<std::array<iovec, 6>, 2> iovs;
    int walked = 0;  // chains walked without error: the property was exercised
    int walked_multi = 0;
    for (int round = 0; round < 40000; ++round) {
        const uint16_t queue_size = static_cast<uint16_t>(1u << (rng() % 3));  // 1, 2, 4
        Guest g(queue_size);
        auto random_desc = [&] {
            return VirtqDesc{addrs[rng() % std::size(addrs)], lens[rng() % std::size(lens)],
                             flag_sets[rng() % std::size(flag_sets)],
                             static_cast<uint16_t>(rng() % (queue_size + 1))};
        };
        for (uint16_t i = 0; i < queue_size; ++i) {
            const VirtqDesc d = random_desc();
            g.ring.set_desc(i, d.addr, d.len, d.flags, d.next);
        }
        for (uint64_t t = kTable; t < kTable + 4 * sizeof(VirtqDesc); t += sizeof(VirtqDesc)) {
            const VirtqDesc d = random_desc();
            g.mem.write_desc(t, d.addr, d.len, d.flags, d.next);
        }
        const auto head = static_cast<uint16_t>(rng() % (queue_size + 1));
        const size_t out_size = rng() % 7;
        const bool indirect_allowed = rng() % 4 != 0;
        const bool with_hint = rng() % 8 != 0;
        const size_t start_hint = rng() % 4;
        std::array<size_t, 2> hints{start_hint, start_hint};
        chains = {};
        iovs = {};
        const PopStatus fast = walk_descriptor_chain(
            g.ring.walk_context(indirect_allowed, with_hint ? &hints[0] : nullptr), head,
            std::span<iovec>(iovs[0].data(), out_size), chains[0]);
        const PopStatus plain =
            reference_walk(g.ring.walk_context(indirect_allowed, with_hint ? &hints[1] : nullptr),
                           head, std::span<iovec>(iovs[1].data(), out_size), chains[1]);
        ASSERT_EQ(fast, plain) << "round " << round;
        ASSERT_EQ(hints[0], hints[1]) << "round " << round;
        if (fast != PopStatus::ok) {
            continue;
        }
        ++walked;
        walked_multi += chains[0].segment_count() > 1 ? 1 : 0;
        ASSERT_EQ(chains[0].head, chains[1].head);
        ASSERT_EQ(chains[0].readable_segments, chains[1].readable_segments);
        ASSERT_EQ(chains[0].writable_segments, chains[1].writable_segments);
        ASSERT_EQ(chains[0].readable_bytes, chains[1].readable_bytes);
        ASSERT_EQ(chains[0].writable_bytes, chains[1].writable_bytes);
        for (uint32_t i = 0; i < chains[0].segment_count(); ++i) {
            ASSERT_EQ(iovs[0][i].iov_base, iovs[1][i].iov_base) << "round " << round;
            ASSERT_EQ(iovs[0][i].iov_len, iovs[1][i].iov_len) << "round " << round;
        }
    }
    EXPECT_GT(walked, 4000);
    EXPECT_GT(walked_multi, 300);
}

}  // namespace
}  // namespace vnet::virtio
