// SplitDeviceRing::pop_burst against its reference, pop in a loop: over
// the same guest ring, two device rings, one popping a burst in one call,
// the other chain by chain, must give the same chains, iovecs, statuses,
// positions and ring state, for one-descriptor chains (decided without the
// general walker), chained and indirect ones, across the avail index's
// wrap, and for every rule a guest can break, with its exact error.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "unit/virtio/chain_test_layout.hpp"
#include "unit/virtio/test_ring.hpp"
#include "virtio/ring/split_device_ring.hpp"

namespace vnet::virtio {
namespace {

using test::GuestSplitRing;
using test::TestGuestMemory;
using namespace test::chain_layout;

constexpr uint16_t kSize = 16;

// What popping gave, whichever way.
struct Popped {
    std::vector<PoppedChain> chains;
    std::vector<iovec> iov;
    std::vector<RingPosition> before;  // before each chain, and before the one that ended it
    PopStatus status = PopStatus::ok;
    uint32_t base = 0;  // vring base afterwards
};

struct Guest {
    explicit Guest(bool indirect = true) : ring(mem, kRing, kSize) {
        const RingConfig config{&mem.map(), indirect, false};
        burst = SplitDeviceRing(ring.layout(), config, 0);
        reference = SplitDeviceRing(ring.layout(), config, 0);
    }

    // Both device rings (and the guest's avail index) start at `base`.
    void start_at(uint16_t base) {
        ring.set_avail_idx(base);
        ASSERT_EQ(burst.restore_vring_base(base), BaseError::ok);
        ASSERT_EQ(reference.restore_vring_base(base), BaseError::ok);
    }

    Popped pop_burst(size_t max, size_t room = 64) {
        Popped p;
        std::vector<PoppedChain> chains(max);
        std::vector<RingPosition> before(max + 1);
        iov_.assign(room, iovec{});
        const BurstPop r = burst.pop_burst(iov_, chains, before);
        p.chains.assign(chains.begin(), chains.begin() + r.count);
        p.before.assign(before.begin(), before.begin() + r.count + 1);
        size_t segments = 0;
        for (const PoppedChain& c : p.chains) {
            segments += c.segment_count();
        }
        p.iov.assign(iov_.begin(), iov_.begin() + static_cast<ptrdiff_t>(segments));
        p.status = r.status;
        p.base = burst.vring_base();
        return p;
    }

    Popped pop_in_a_row(size_t max, size_t room = 64) {
        Popped p;
        iov_.assign(room, iovec{});
        size_t used = 0;
        p.status = PopStatus::ok;
        while (p.chains.size() < max) {
            p.before.push_back(reference.position());
            PoppedChain c;
            p.status = reference.pop(std::span<iovec>(iov_).subspan(used), c);
            if (p.status != PopStatus::ok) {
                break;
            }
            p.chains.push_back(c);
            used += c.segment_count();
        }
        if (p.before.size() == p.chains.size()) {
            p.before.push_back(reference.position());
        }
        p.iov.assign(iov_.begin(), iov_.begin() + static_cast<ptrdiff_t>(used));
        p.base = reference.vring_base();
        return p;
    }

    // Pops both ways and checks they agree; returns the burst's.
    Popped pop_both(size_t max, size_t room = 64) {
        const Popped a = pop_burst(max, room);
        const Popped b = pop_in_a_row(max, room);
        EXPECT_EQ(a.status, b.status);
        EXPECT_EQ(a.base, b.base);
        EXPECT_EQ(a.chains.size(), b.chains.size());
        for (size_t i = 0; i < std::min(a.chains.size(), b.chains.size()); ++i) {
            EXPECT_EQ(a.chains[i].id, b.chains[i].id) << "chain " << i;
            EXPECT_EQ(a.chains[i].slots, b.chains[i].slots) << "chain " << i;
            EXPECT_EQ(a.chains[i].readable_segments, b.chains[i].readable_segments)
                << "chain " << i;
            EXPECT_EQ(a.chains[i].writable_segments, b.chains[i].writable_segments)
                << "chain " << i;
            EXPECT_EQ(a.chains[i].readable_bytes, b.chains[i].readable_bytes) << "chain " << i;
            EXPECT_EQ(a.chains[i].writable_bytes, b.chains[i].writable_bytes) << "chain " << i;
        }
        EXPECT_EQ(a.iov.size(), b.iov.size());
        for (size_t i = 0; i < std::min(a.iov.size(), b.iov.size()); ++i) {
            EXPECT_EQ(a.iov[i].iov_base, b.iov[i].iov_base) << "iovec " << i;
            EXPECT_EQ(a.iov[i].iov_len, b.iov[i].iov_len) << "iovec " << i;
        }
        EXPECT_EQ(a.before.size(), b.before.size());
        for (size_t i = 0; i < std::min(a.before.size(), b.before.size()); ++i) {
            EXPECT_EQ(a.before[i], b.before[i]) << "position " << i;
        }
        // Seen-but-given-back chains are not new work for either.
        EXPECT_EQ(burst.enable_notifications(), reference.enable_notifications());
        return a;
    }

    // A good one-descriptor chain at `head`: 64 readable bytes of its own.
    void one(uint16_t head, uint16_t flags = 0) {
        ring.set_desc(head, kBuf + head * 0x100u, 64, flags);
    }
    void post(std::initializer_list<uint16_t> heads) {
        for (const uint16_t h : heads) {
            ring.make_available(h);
        }
    }

    TestGuestMemory mem;
    uint8_t* low = mem.add_region(kRing, kLowEnd - kRing);
    uint8_t* high = mem.add_region(kHigh, 0x1000);
    GuestSplitRing ring;
    SplitDeviceRing burst;
    SplitDeviceRing reference;

private:
    std::vector<iovec> iov_;
};

// ---- the common burst -----------------------------------------------------------

TEST(SplitBurstPop, pops_one_descriptor_chains_in_avail_order_with_their_buffers) {
    Guest g;
    for (uint16_t h = 0; h < 6; ++h) {
        g.one(h, h % 2 == 0 ? 0 : W);
    }
    g.post({3, 1, 4, 0, 5, 2});
    const Popped p = g.pop_both(8);
    EXPECT_EQ(p.status, PopStatus::empty);
    ASSERT_EQ(p.chains.size(), 6u);
    const uint16_t order[] = {3, 1, 4, 0, 5, 2};
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(p.chains[i].id, order[i]);
        EXPECT_EQ(p.chains[i].slots, 1);
        EXPECT_EQ(p.iov[i].iov_base, g.mem.host(kBuf + order[i] * 0x100u));
        EXPECT_EQ(p.iov[i].iov_len, 64u);
        const bool writable = order[i] % 2 == 1;
        EXPECT_EQ(p.chains[i].writable_segments, writable ? 1 : 0);
        EXPECT_EQ(p.chains[i].readable_bytes, writable ? 0u : 64u);
    }
    EXPECT_EQ(p.base, 6u);
}

TEST(SplitBurstPop, pops_across_the_16_bit_avail_index_wrap) {
    Guest g;
    g.start_at(0xfffd);
    for (uint16_t h = 0; h < 6; ++h) {
        g.one(h);
    }
    g.post({0, 1, 2, 3, 4, 5});
    const Popped p = g.pop_both(8);
    EXPECT_EQ(p.chains.size(), 6u);
    EXPECT_EQ(p.base, 3u);  // 0xfffd + 6, wrapped
    EXPECT_EQ(p.before[3], RingPosition{0});
}

TEST(SplitBurstPop, stops_when_the_chains_span_is_full_and_goes_on_from_there) {
    Guest g;
    for (uint16_t h = 0; h < 5; ++h) {
        g.one(h);
    }
    g.post({0, 1, 2, 3, 4});
    Popped p = g.pop_both(3);
    EXPECT_EQ(p.status, PopStatus::ok);
    EXPECT_EQ(p.chains.size(), 3u);
    p = g.pop_both(3);
    EXPECT_EQ(p.status, PopStatus::empty);
    ASSERT_EQ(p.chains.size(), 2u);
    EXPECT_EQ(p.chains[0].id, 3);
}

TEST(SplitBurstPop, sees_buffers_posted_after_its_cached_avail_index_ran_out) {
    Guest g;
    g.one(0);
    g.one(1);
    g.post({0});
    EXPECT_EQ(g.pop_both(4).chains.size(), 1u);
    g.post({1});
    const Popped p = g.pop_both(4);
    ASSERT_EQ(p.chains.size(), 1u);
    EXPECT_EQ(p.chains[0].id, 1);
}

TEST(SplitBurstPop, mixes_one_descriptor_chained_and_indirect_chains_in_one_burst) {
    Guest g;
    g.one(0);
    g.ring.set_desc(1, kBuf + 0x1000, 12, N, 9);  // header, then frame
    g.ring.set_desc(9, kBuf + 0x1100, 1500);
    g.mem.write_descs(kTable, {{kBuf + 0x2000, 10, N, 1}, {kBuf + 0x2100, 200, W, 0}});
    g.ring.set_desc(2, kTable, 32, I);
    g.ring.set_desc(3, kBuf + 0x3000, 0);            // empty: no iovec
    g.ring.set_desc(4, kHigh + 0x100, 64);           // another region than the hint's
    g.ring.set_desc(5, kLowEnd - 32, 64);            // spans both regions: two iovecs
    g.ring.set_desc(6, kBuf + 0x4000, 2048, W);      // back in the first region
    g.ring.set_desc(7, kBuf + 0x5000, 8, W | N, 8);  // writable chain
    g.ring.set_desc(8, kBuf + 0x5100, 8, W);
    g.post({0, 1, 2, 3, 4, 5, 6, 7});
    const Popped p = g.pop_both(16);
    EXPECT_EQ(p.status, PopStatus::empty);
    ASSERT_EQ(p.chains.size(), 8u);
    EXPECT_EQ(p.chains[1].readable_segments, 2);
    EXPECT_EQ(p.chains[1].readable_bytes, 1512u);
    EXPECT_EQ(p.chains[2].readable_segments, 1);
    EXPECT_EQ(p.chains[2].writable_segments, 1);
    EXPECT_EQ(p.chains[3].segment_count(), 0u);
    EXPECT_EQ(p.chains[5].readable_segments, 2);
    EXPECT_EQ(p.chains[7].writable_bytes, 16u);
    EXPECT_EQ(p.iov.size(), 11u);
}

TEST(SplitBurstPop, falls_back_to_the_walker_without_indirect_or_with_a_hint_elsewhere) {
    Guest g(/*indirect=*/false);
    g.ring.set_desc(0, kHigh, 64);
    g.one(1);
    g.ring.set_desc(2, kHigh + 64, 64);
    g.post({0, 1, 2});
    EXPECT_EQ(g.pop_both(4).chains.size(), 3u);
}

// The one-descriptor heads are taken in runs, and a run stops at any other
// head: the walker decides that one, the next run starts after it, and a
// bad head after a walked one gets pop's exact error and ring state.
TEST(SplitBurstPop, a_run_resumes_after_each_head_the_walker_decides_and_stops_at_a_bad_one) {
    Guest g;
    g.one(0);
    g.one(1);
    g.one(2);
    g.ring.set_desc(3, kBuf + 0x3000, 0);  // empty: the walker's
    g.ring.set_desc(5, kLowEnd - 32, 64);  // spans both regions: the walker's
    g.ring.set_desc(10, kUnmapped, 64);    // one descriptor, unmapped
    g.post({0, 3, 1, 5, 2, 10, 0});
    const Popped p = g.pop_both(16);
    EXPECT_EQ(p.status, PopStatus::buffer_unmapped);
    ASSERT_EQ(p.chains.size(), 5u);
    EXPECT_EQ(p.chains[4].id, 2);
    EXPECT_EQ(p.iov.size(), 5u);  // three runs of one, none for the empty, two for the span
    EXPECT_EQ(p.base, 6u);        // the refused chain is taken, as by pop
}

// ---- a chain that needs more iovecs than are left --------------------------------

TEST(SplitBurstPop, leaves_a_chain_without_room_in_the_ring_seen_for_a_retry) {
    Guest g;
    g.one(0);
    g.one(1);
    g.ring.set_desc(2, kBuf + 0x1000, 8, N, 3);
    g.ring.set_desc(3, kBuf + 0x1100, 8, N, 4);
    g.ring.set_desc(4, kBuf + 0x1200, 8);
    g.post({0, 1, 2});
    Popped p = g.pop_both(8, /*room=*/4);
    EXPECT_EQ(p.status, PopStatus::too_many_segments);
    EXPECT_EQ(p.chains.size(), 2u);
    EXPECT_EQ(p.base, 2u);  // not taken
    p = g.pop_both(8, /*room=*/3);
    EXPECT_EQ(p.status, PopStatus::empty);
    ASSERT_EQ(p.chains.size(), 1u);
    EXPECT_EQ(p.chains[0].id, 2);
}

TEST(SplitBurstPop, refuses_a_one_descriptor_chain_when_no_iovec_is_left) {
    Guest g;
    g.one(0);
    g.one(1);
    g.post({0, 1});
    const Popped p = g.pop_both(8, /*room=*/1);
    EXPECT_EQ(p.status, PopStatus::too_many_segments);
    EXPECT_EQ(p.chains.size(), 1u);
}

TEST(SplitBurstPop, a_run_that_fills_the_iovecs_leaves_the_next_one_descriptor_chain) {
    Guest g;
    for (uint16_t h = 0; h < 5; ++h) {
        g.one(h, W);
    }
    g.post({0, 1, 2, 3, 4});
    const Popped p = g.pop_both(8, /*room=*/3);
    EXPECT_EQ(p.status, PopStatus::too_many_segments);
    EXPECT_EQ(p.chains.size(), 3u);
    EXPECT_EQ(p.base, 3u);  // not taken: seen, for a retry
}

// ---- every rule a guest can break, in the middle of a burst ------------------------

// Two good chains, then the bad one at head 10 (what `setup` writes), then
// a good one: the burst returns the two, then the bad one's exact error,
// and takes it or not exactly as pop does.
struct HostileCase {
    std::string name;
    std::function<void(Guest&)> setup;
    PopStatus expected;
    uint32_t base_after;  // 2: the bad entry is not taken; 3: it is
};

void PrintTo(const HostileCase& c, std::ostream* os) {
    *os << c.name;
}

class SplitBurstPopHostile : public ::testing::TestWithParam<HostileCase> {};

TEST_P(SplitBurstPopHostile, returns_the_good_chains_then_the_exact_error_of_pop) {
    const HostileCase& c = GetParam();
    Guest g;
    g.one(0);
    g.one(1);
    g.one(2);
    g.post({0, 1});
    c.setup(g);
    if (c.expected != PopStatus::avail_index_jump) {
        g.post({2});
    }
    const Popped p = g.pop_both(8);
    EXPECT_EQ(p.status, c.expected);
    EXPECT_EQ(p.chains.size(), c.expected == PopStatus::avail_index_jump ? 0u : 2u);
    EXPECT_EQ(p.base, c.base_after);
}

const HostileCase kHostileCases[] = {
    {"head_out_of_range", [](Guest& g) { g.post({kSize}); }, PopStatus::head_out_of_range, 2},
    {"avail_index_jump", [](Guest& g) { g.ring.set_avail_idx(static_cast<uint16_t>(kSize + 1)); },
     PopStatus::avail_index_jump, 0},
    {"next_out_of_range",
     [](Guest& g) {
         g.ring.set_desc(10, kBuf, 8, N, kSize);
         g.post({10});
     },
     PopStatus::next_out_of_range, 3},
    {"chain_loop",
     [](Guest& g) {
         g.ring.set_desc(10, kBuf, 8, N, 11);
         g.ring.set_desc(11, kBuf, 8, N, 10);
         g.post({10});
     },
     PopStatus::chain_loop, 3},
    {"chain_loop_on_itself",
     [](Guest& g) {
         g.ring.set_desc(10, kBuf, 0, N, 10);
         g.post({10});
     },
     PopStatus::chain_loop, 3},
    {"indirect_nested",
     [](Guest& g) {
         g.mem.write_descs(kTable, {{kBuf, 8, N, 1}, {kTable + 0x100, 16, I, 0}});
         g.ring.set_desc(10, kTable, 32, I);
         g.post({10});
     },
     PopStatus::indirect_nested, 3},
    {"indirect_with_next",
     [](Guest& g) {
         g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
         g.ring.set_desc(10, kTable, 16, I | N, 11);
         g.ring.set_desc(11, kBuf, 8);
         g.post({10});
     },
     PopStatus::indirect_with_next, 3},
    {"indirect_bad_length",
     [](Guest& g) {
         g.ring.set_desc(10, kTable, 24, I);
         g.post({10});
     },
     PopStatus::indirect_bad_length, 3},
    {"indirect_too_large",
     [](Guest& g) {
         g.ring.set_desc(10, kTable, (kSize + 1) * 16, I);
         g.post({10});
     },
     PopStatus::indirect_too_large, 3},
    {"indirect_table_unmapped",
     [](Guest& g) {
         g.ring.set_desc(10, kLowEnd - 16, 32, I);
         g.post({10});
     },
     PopStatus::indirect_table_unmapped, 3},
    {"readable_after_writable",
     [](Guest& g) {
         g.ring.set_desc(10, kBuf, 8, W | N, 11);
         g.ring.set_desc(11, kBuf, 8);
         g.post({10});
     },
     PopStatus::readable_after_writable, 3},
    {"total_length_overflow",
     [](Guest& g) {
         g.ring.set_desc(10, kBuf, 1, N, 11);
         g.ring.set_desc(11, kUnmapped, 0xffff'ffff, W);
         g.post({10});
     },
     PopStatus::total_length_overflow, 3},
    {"buffer_unmapped_one_descriptor",
     [](Guest& g) {
         g.ring.set_desc(10, kUnmapped, 64);
         g.post({10});
     },
     PopStatus::buffer_unmapped, 3},
    {"buffer_past_the_last_region",
     [](Guest& g) {
         g.ring.set_desc(10, kHigh + 0x1000 - 8, 64);
         g.post({10});
     },
     PopStatus::buffer_unmapped, 3},
    {"buffer_wrapping_the_address_space",
     [](Guest& g) {
         g.ring.set_desc(10, ~uint64_t{0} - 8, 64);
         g.post({10});
     },
     PopStatus::buffer_unmapped, 3},
};

INSTANTIATE_TEST_SUITE_P(Rules, SplitBurstPopHostile, ::testing::ValuesIn(kHostileCases),
                         [](const ::testing::TestParamInfo<HostileCase>& param) {
                             return param.param.name;
                         });

TEST(SplitBurstPop, refuses_indirect_when_the_feature_was_not_negotiated) {
    Guest g(/*indirect=*/false);
    g.one(0);
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(10, kTable, 16, I);
    g.post({0, 10});
    const Popped p = g.pop_both(8);
    EXPECT_EQ(p.status, PopStatus::indirect_not_negotiated);
    EXPECT_EQ(p.chains.size(), 1u);
    EXPECT_EQ(p.base, 2u);
}

TEST(SplitBurstPop, a_broken_burst_positions_the_refused_chain_for_a_rewind) {
    Guest g;
    g.one(0);
    g.ring.set_desc(10, kUnmapped, 64);
    g.post({0, 10});
    const Popped p = g.pop_both(8);
    ASSERT_EQ(p.before.size(), 2u);
    EXPECT_EQ(p.before[1], RingPosition{1});
    g.burst.rewind(p.before[1]);
    EXPECT_EQ(g.burst.vring_base(), 1u);
}

}  // namespace
}  // namespace vnet::virtio
