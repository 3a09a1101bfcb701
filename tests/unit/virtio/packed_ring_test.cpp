// PackedRing rules of its own (virtio 1.2 §2.8): every hostile-input rule
// with the exact error it must give, the batched used write, the event
// suppression areas and the vring base encoding. Descriptors are written
// by hand here (frontend::RawPackedRingWriter), the way a hostile guest
// would; the contract shared with the split ring is in
// device_ring_typed_test.cpp.
#include "virtio/ring/packed_ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "frontend/raw_packed_ring_writer.hpp"
#include "unit/virtio/test_ring.hpp"

namespace vnet::virtio {
namespace {

using test::TestGuestMemory;

constexpr uint64_t kRingGpa = 0x10000;
constexpr uint64_t kData = 0x100000;      // 128 KiB region
constexpr uint64_t kNextData = 0x120000;  // a second region right after it
constexpr uint64_t kTable = 0x110000;     // indirect tables live in kData
constexpr uint64_t kUnmapped = 0x900000;
constexpr uint16_t N = PackedDesc::kFlagNext;
constexpr uint16_t W = PackedDesc::kFlagWrite;
constexpr uint16_t I = PackedDesc::kFlagIndirect;

// The ring is laid out by the driver side (frontend::carve_packed_ring_layout)
// and written through its raw writer, which lets a test put any flags in
// any slot; the device ring under test reads the same areas.
struct Raw {
    explicit Raw(uint16_t size = 8, bool indirect = true, bool event_idx = false,
                 bool in_order = false)
        : writer(frontend::carve_packed_ring_layout(
              std::span<std::byte>(reinterpret_cast<std::byte*>(ring),
                                   frontend::packed_ring_storage_bytes(size)),
              size)),
          layout{writer.layout().desc, writer.layout().driver_event, writer.layout().device_event,
                 size},
          ring_(layout, RingConfig{&mem.map(), indirect, event_idx, in_order}) {}

    // The driver's view of slot `slot` for wrap counter `wrap` (§2.8.21.1).
    void put(uint16_t slot, uint64_t addr, uint32_t len, uint16_t id, uint16_t flags = 0,
             bool wrap = true) {
        writer.put(slot, addr, len, id, flags, wrap);
    }
    void put_raw_flags(uint16_t slot, uint16_t flags) { writer.put_raw_flags(slot, flags); }
    void table(uint64_t gpa, std::initializer_list<PackedDesc> entries) {
        uint8_t* p = mem.host(gpa, entries.size() * sizeof(PackedDesc));
        for (const PackedDesc& e : entries) {
            std::memcpy(p, &e, sizeof e);
            p += sizeof e;
        }
    }

    PopStatus pop(size_t room = 16) { return ring_.pop(std::span<iovec>(iov.data(), room), chain); }

    TestGuestMemory mem;
    uint8_t* ring = mem.add_region(kRingGpa, 0x80000);
    uint8_t* data = mem.add_region(kData, 0x20000);
    uint8_t* next_data = mem.add_region(kNextData, 0x1000);
    frontend::RawPackedRingWriter writer;
    PackedRingLayout layout;
    PackedRing ring_;
    PoppedChain chain;
    std::array<iovec, 16> iov{};
};

// ---- chains in the ring -------------------------------------------------------------

// slots_between's division-free path (both positions within one lap) and
// its general one (a driver's 15-bit index) against the plain definition:
// the distance forward on a cycle of 2 * size positions.
TEST(PackedLayout, slots_between_is_the_forward_distance_on_a_cycle_of_two_laps) {
    const auto reference = [](PackedPosition from, PackedPosition to, uint16_t size) {
        const uint64_t lap = 2u * uint64_t{size};
        const auto linear = [size](PackedPosition p) {
            return uint64_t{p.index} + (p.wrap ? 0u : size);
        };
        return static_cast<uint32_t>((linear(to) % lap + lap - linear(from) % lap) % lap);
    };
    for (const uint16_t size : {1, 2, 3, 5, 8, 256, 1000, 32768}) {
        // Every index of small rings; the edges and a hostile 15-bit index
        // of big ones.
        std::vector<uint16_t> indices;
        if (size <= 8) {
            for (uint16_t i = 0; i < 3 * size; ++i) {
                indices.push_back(i);
            }
        } else {
            for (uint32_t i : {0u, 1u, uint32_t{size} / 2, uint32_t{size} - 1u}) {
                indices.push_back(static_cast<uint16_t>(i));
            }
        }
        indices.push_back(0x7fff);
        for (const uint16_t a : indices) {
            for (const uint16_t b : indices) {
                for (const bool wa : {false, true}) {
                    for (const bool wb : {false, true}) {
                        const PackedPosition from{a, wa};
                        const PackedPosition to{b, wb};
                        ASSERT_EQ(slots_between(from, to, size), reference(from, to, size))
                            << "size " << size << " from " << a << "/" << wa << " to " << b << "/"
                            << wb;
                    }
                }
            }
        }
    }
    // The ring's own positions, spelled out: one lap on is `size` slots, the
    // same point is 0, and one slot behind is a whole cycle less one.
    EXPECT_EQ(slots_between({3, true}, {3, false}, 8), 8u);
    EXPECT_EQ(slots_between({3, true}, {3, true}, 8), 0u);
    EXPECT_EQ(slots_between({3, true}, {2, true}, 8), 15u);
    EXPECT_EQ(slots_between({7, true}, {0, false}, 8), 1u);
}

TEST(PackedRing, pops_a_chain_of_consecutive_slots_with_the_id_of_the_last_one) {
    Raw r;
    r.put(0, kData, 10, /*id=*/7, N);  // ids of all but the last descriptor are ignored
    r.put(1, kData + 100, 20, 7, N);
    r.put(2, kData + 200, 30, 3, W);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 3);
    EXPECT_EQ(r.chain.slots, 3);
    EXPECT_EQ(r.chain.readable_segments, 2);
    EXPECT_EQ(r.chain.writable_segments, 1);
    EXPECT_EQ(r.chain.readable_bytes, 30u);
    EXPECT_EQ(r.chain.writable_bytes, 30u);
    EXPECT_EQ(r.iov[2].iov_base, r.data + 200);
    EXPECT_EQ(r.ring_.avail_position(), (PackedPosition{3, true}));
}

TEST(PackedRing, a_head_not_marked_available_for_this_wrap_means_empty) {
    Raw r;
    EXPECT_EQ(r.pop(), PopStatus::empty);  // zeroed ring (§2.8.13)
    r.put(0, kData, 10, 0, 0, /*wrap=*/false);
    EXPECT_EQ(r.pop(), PopStatus::empty);  // available for the other lap
    r.put_raw_flags(0, used_flags_for(true));
    EXPECT_EQ(r.pop(), PopStatus::empty);  // a used descriptor
    r.put_raw_flags(0, PackedDesc::kFlagAvail | PackedDesc::kFlagUsed);
    EXPECT_EQ(r.pop(), PopStatus::empty);
    EXPECT_EQ(r.ring_.avail_position(), PackedPosition{});
}

TEST(PackedRing, accepts_a_chain_of_exactly_the_ring_size) {
    Raw r(4);
    for (uint16_t i = 0; i < 3; ++i) {
        r.put(i, kData + 64u * i, 8, 0, N);
    }
    r.put(3, kData + 192, 8, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.slots, 4);
    EXPECT_EQ(r.ring_.avail_position(), (PackedPosition{0, false}));
}

TEST(PackedRing, rejects_a_chain_longer_than_the_ring) {
    Raw r(4);
    for (uint16_t i = 0; i < 4; ++i) {
        r.put(i, kData, 8, 0, N);  // NEXT on the last slot: the chain would wrap onto itself
    }
    EXPECT_EQ(r.pop(), PopStatus::chain_too_long);
}

TEST(PackedRing, rejects_a_buffer_id_out_of_range) {
    Raw r(8);
    r.put(0, kData, 8, 8);
    EXPECT_EQ(r.pop(), PopStatus::id_out_of_range);
    EXPECT_EQ(r.ring_.avail_position(), PackedPosition{});
}

TEST(PackedRing, rejects_more_slots_in_flight_than_the_ring_holds) {
    Raw r(2);
    r.put(0, kData, 8, 0);
    r.put(1, kData, 8, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    // Neither slot came back used, yet slot 0 claims to be available for the next lap.
    r.put(0, kData, 8, 0, 0, /*wrap=*/false);
    EXPECT_EQ(r.pop(), PopStatus::too_many_in_flight);
    r.ring_.add_used(0, 1, 0);  // once one is used (even unpublished) the slot may be reused
    EXPECT_EQ(r.pop(), PopStatus::ok);
}

TEST(PackedRing, skip_checks_a_chain_like_pop_and_maps_nothing) {
    Raw r(4);
    for (uint16_t i = 0; i < 4; ++i) {
        r.put(i, kUnmapped, 8, 0, N);  // unmapped buffers: skip never translates
    }
    EXPECT_EQ(r.ring_.skip(r.chain), PopStatus::chain_too_long);
    r.put(3, kUnmapped, 8, 4);  // ends the chain, with an id out of range
    EXPECT_EQ(r.ring_.skip(r.chain), PopStatus::id_out_of_range);
    r.put(3, kUnmapped, 8, 2);
    ASSERT_EQ(r.ring_.skip(r.chain), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 2);
    EXPECT_EQ(r.chain.slots, 4);
    EXPECT_EQ(r.ring_.avail_position(), (PackedPosition{0, false}));
}

TEST(PackedRing, counts_available_chains_without_taking_them) {
    Raw r(8);
    EXPECT_EQ(r.ring_.untaken_chains(), 0);
    EXPECT_FALSE(r.ring_.next_available());
    r.put(0, kData, 8, 0, N);
    r.put(1, kData, 8, 0);     // chain 1: two slots
    r.put(2, kData, 8, 1);     // chain 2
    r.put(3, kData, 8, 2, N);  // chain 3, still being written: its next slot is not available
    EXPECT_EQ(r.ring_.untaken_chains(), 2);
    EXPECT_TRUE(r.ring_.next_available());
    EXPECT_EQ(r.ring_.avail_position(), PackedPosition{});
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.ring_.untaken_chains(), 1);
}

TEST(PackedRing, rejects_a_chained_descriptor_not_marked_available) {
    Raw r;
    r.put(0, kData, 8, 0, N);
    r.put(1, kData, 8, 0, 0, /*wrap=*/false);  // stale: from the previous lap
    EXPECT_EQ(r.pop(), PopStatus::descriptor_not_available);
    r.put_raw_flags(1, 0);
    EXPECT_EQ(r.pop(), PopStatus::descriptor_not_available);
}

TEST(PackedRing, a_chain_across_the_ring_end_uses_the_flipped_wrap_counter) {
    Raw r(4);
    ASSERT_EQ(r.ring_.restore_vring_base(0x8003), BaseError::ok);  // avail at slot 3, wrap 1
    r.put(3, kData, 8, 0, N, true);
    r.put(0, kData + 8, 8, 2, 0, /*wrap=*/false);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.slots, 2);
    EXPECT_EQ(r.ring_.avail_position(), (PackedPosition{1, false}));

    Raw bad(4);
    ASSERT_EQ(bad.ring_.restore_vring_base(0x8003), BaseError::ok);
    bad.put(3, kData, 8, 0, N, true);
    bad.put(0, kData + 8, 8, 2, 0, /*wrap=*/true);  // the driver forgot to flip
    EXPECT_EQ(bad.pop(), PopStatus::descriptor_not_available);
}

TEST(PackedRing, rejects_a_readable_descriptor_after_a_writable_one) {
    Raw r;
    r.put(0, kData, 8, 0, W | N);
    r.put(1, kData, 0, 0);  // zero length still counts (the rule orders descriptors)
    EXPECT_EQ(r.pop(), PopStatus::readable_after_writable);
}

TEST(PackedRing, rejects_a_chain_of_2_pow_32_bytes) {
    Raw r;
    // Checked before translation: the second buffer need not even be mapped.
    r.put(0, kData, 1, 0, N);
    r.put(1, kUnmapped, 0xffff'ffff, 0, W);
    EXPECT_EQ(r.pop(), PopStatus::total_length_overflow);
}

TEST(PackedRing, rejects_a_buffer_outside_guest_memory) {
    Raw r;
    r.put(0, kUnmapped, 8, 0);
    EXPECT_EQ(r.pop(), PopStatus::buffer_unmapped);
    Raw wraps;
    wraps.put(0, ~uint64_t{0} - 3, 8, 0);  // gpa + len wraps around 2^64
    EXPECT_EQ(wraps.pop(), PopStatus::buffer_unmapped);
    Raw past_end;
    past_end.put(0, kNextData + 0xff8, 16, 0);  // runs off the last region
    EXPECT_EQ(past_end.pop(), PopStatus::buffer_unmapped);
}

TEST(PackedRing, splits_a_buffer_that_spans_two_regions_into_two_iovecs) {
    Raw r;
    r.put(0, kNextData - 16, 32, 0);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.chain.readable_segments, 2);
    EXPECT_EQ(r.iov[0].iov_base, r.data + 0x20000 - 16);
    EXPECT_EQ(r.iov[0].iov_len, 16u);
    EXPECT_EQ(r.iov[1].iov_base, r.next_data);
    EXPECT_EQ(r.iov[1].iov_len, 16u);
}

TEST(PackedRing, too_many_segments_is_its_own_error_and_takes_nothing) {
    Raw r;
    r.put(0, kNextData - 16, 32, 0, N);  // two iovecs
    r.put(1, kData, 8, 0);
    EXPECT_EQ(r.pop(2), PopStatus::too_many_segments);
    EXPECT_EQ(r.ring_.avail_position(), PackedPosition{});
    ASSERT_EQ(r.pop(3), PopStatus::ok);
    EXPECT_EQ(r.chain.segment_count(), 3u);
}

TEST(PackedRing, zero_length_descriptors_add_no_iovec) {
    Raw r;
    r.put(0, kUnmapped, 0, 0, N);
    r.put(1, kData, 8, 0);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.readable_segments, 1);
    EXPECT_EQ(r.chain.slots, 2);
}

// ---- indirect tables ------------------------------------------------------------------

TEST(PackedRing, walks_an_indirect_table_as_one_slot) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, 0}, {kData + 64, 20, 0, 0}, {kData + 128, 30, 0, W}});
    r.put(0, kTable, 48, 5, I);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 5);
    EXPECT_EQ(r.chain.slots, 1);
    EXPECT_EQ(r.chain.readable_segments, 2);
    EXPECT_EQ(r.chain.writable_segments, 1);
    EXPECT_EQ(r.chain.readable_bytes, 30u);
    EXPECT_EQ(r.iov[2].iov_base, r.data + 128);
}

TEST(PackedRing, ignores_next_and_id_inside_an_indirect_table) {
    Raw r;
    // §2.8.7: only WRITE is valid in a table; NEXT and id are reserved and ignored.
    r.table(kTable, {{kData, 10, 99, N}, {kData + 64, 20, 1234, N | W}});
    r.put(0, kTable, 32, 1, I);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.readable_segments, 1);
    EXPECT_EQ(r.chain.writable_segments, 1);
    EXPECT_EQ(r.chain.id, 1);
}

TEST(PackedRing, ignores_write_on_the_descriptor_that_names_a_table) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, 0}});
    r.put(0, kTable, 16, 0, I | W);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.readable_segments, 1);
}

TEST(PackedRing, reads_a_misaligned_indirect_table) {
    Raw r;
    r.table(kTable + 4, {{kData, 10, 0, 0}, {kData + 64, 20, 0, W}});
    r.put(0, kTable + 4, 32, 0, I);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.segment_count(), 2u);
}

TEST(PackedRing, rejects_indirect_when_not_negotiated) {
    Raw r(8, /*indirect=*/false);
    r.table(kTable, {{kData, 10, 0, 0}});
    r.put(0, kTable, 16, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_not_negotiated);
}

TEST(PackedRing, rejects_an_indirect_table_of_zero_length) {
    Raw r;
    r.put(0, kTable, 0, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_bad_length);
}

TEST(PackedRing, rejects_an_indirect_table_not_a_multiple_of_16) {
    Raw r;
    r.put(0, kTable, 24, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_bad_length);
}

TEST(PackedRing, rejects_an_indirect_table_larger_than_the_ring) {
    Raw r(4);
    r.put(0, kTable, 5 * 16, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_too_large);
}

TEST(PackedRing, rejects_an_indirect_table_outside_guest_memory) {
    Raw r;
    r.put(0, kUnmapped, 16, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_table_unmapped);
    Raw split;
    split.put(0, kNextData - 16, 32, 0, I);  // must lie in one region: it is read in place
    EXPECT_EQ(split.pop(), PopStatus::indirect_table_unmapped);
}

TEST(PackedRing, rejects_a_nested_indirect_table) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, 0}, {kTable + 64, 16, 0, I}});
    r.put(0, kTable, 32, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_nested);
}

TEST(PackedRing, rejects_indirect_together_with_next) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, 0}});
    r.put(0, kTable, 16, 0, I | N);
    r.put(1, kData, 8, 0);
    EXPECT_EQ(r.pop(), PopStatus::indirect_with_next);
}

TEST(PackedRing, rejects_an_indirect_descriptor_at_the_end_of_a_chain) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, 0}});
    r.put(0, kData, 8, 0, N);
    r.put(1, kTable, 16, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::indirect_in_chain);
}

TEST(PackedRing, rejects_a_readable_entry_after_a_writable_one_in_a_table) {
    Raw r;
    r.table(kTable, {{kData, 10, 0, W}, {kData, 10, 0, 0}});
    r.put(0, kTable, 32, 0, I);
    EXPECT_EQ(r.pop(), PopStatus::readable_after_writable);
}

// ---- the used side --------------------------------------------------------------------

TEST(PackedRing, a_driver_polling_the_head_sees_nothing_until_publish) {
    Raw r;
    r.put(0, kData, 8, 4, N);
    r.put(1, kData, 8, 4);
    r.put(2, kData, 8, 6);
    r.put(3, kData, 8, 1);
    PoppedChain chains[3];
    for (auto& c : chains) {
        ASSERT_EQ(r.pop(), PopStatus::ok);
        c = r.chain;
    }
    const uint16_t head_before = r.layout.desc[0].flags;
    r.ring_.add_used(chains[0].id, chains[0].slots, 100);  // slots 0-1
    r.ring_.add_used(chains[1].id, chains[1].slots, 0);    // slot 2
    r.ring_.add_used(chains[2].id, chains[2].slots, 7);    // slot 3
    // The later ones are already written; the head still shows the driver's flags.
    EXPECT_EQ(r.layout.desc[0].flags, head_before);
    EXPECT_FALSE(is_used(r.layout.desc[0].flags, true));
    EXPECT_TRUE(is_used(r.layout.desc[2].flags, true));
    EXPECT_TRUE(is_used(r.layout.desc[3].flags, true));
    EXPECT_EQ(r.layout.desc[0].id, 4);  // id and len go in early, flags last
    EXPECT_EQ(r.layout.desc[0].len, 100u);
    EXPECT_EQ(r.ring_.published_used_position(), PackedPosition{});
    r.ring_.publish_used();
    EXPECT_TRUE(is_used(r.layout.desc[0].flags, true));
    EXPECT_EQ(r.ring_.published_used_position(), (PackedPosition{4, true}));
}

TEST(PackedRing, a_used_descriptor_has_write_only_when_the_device_wrote_bytes) {
    Raw r;
    r.put(0, kData, 8, 0);
    r.put(1, kData, 8, 1, W);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring_.add_used(0, 1, 0);
    r.ring_.add_used(1, 1, 8);
    r.ring_.publish_used();
    // §2.8.3: in a used descriptor WRITE says whether anything was written.
    EXPECT_EQ(r.layout.desc[0].flags & W, 0);
    EXPECT_EQ(r.layout.desc[1].flags & W, W);
}

// VIRTIO_F_IN_ORDER (§2.8.20): a run of zero-length completions (a TX
// burst) is one used descriptor at the run's first slot with the last
// buffer's id; the driver takes every buffer up to it as used. A buffer
// with a length gets its own descriptor, and no run crosses a publish.
TEST(PackedRing, in_order_folds_a_run_of_zero_length_completions_into_one_descriptor) {
    Raw r(8, true, false, /*in_order=*/true);
    r.put(0, kData, 8, 0, N);
    r.put(1, kData, 8, 0);  // chain id 0, slots 0-1
    r.put(2, kData, 8, 2);
    r.put(3, kData, 8, 3, W);
    r.put(4, kData, 8, 4);
    r.put(5, kData, 8, 5);
    PoppedChain chains[5];
    for (auto& c : chains) {
        ASSERT_EQ(r.pop(), PopStatus::ok);
        c = r.chain;
    }
    const uint16_t untouched = r.layout.desc[1].flags;
    r.ring_.add_used(chains[0].id, chains[0].slots, 0);  // slots 0-1
    r.ring_.add_used(chains[1].id, chains[1].slots, 0);  // slot 2: folds into slot 0
    r.ring_.add_used(chains[2].id, chains[2].slots, 8);  // slot 3: a length, its own
    r.ring_.add_used(chains[3].id, chains[3].slots, 0);  // slot 4
    r.ring_.publish_used();
    r.ring_.add_used(chains[4].id, chains[4].slots, 0);  // slot 5: after a publish, its own
    r.ring_.publish_used();
    EXPECT_TRUE(is_used(r.layout.desc[0].flags, true));
    EXPECT_EQ(r.layout.desc[0].id, 2);  // the run's last buffer
    EXPECT_EQ(r.layout.desc[0].len, 0u);
    EXPECT_EQ(r.layout.desc[1].flags, untouched);  // inside the run: the driver's still
    EXPECT_FALSE(is_used(r.layout.desc[2].flags, true));
    EXPECT_TRUE(is_used(r.layout.desc[3].flags, true));
    EXPECT_EQ(r.layout.desc[3].id, 3);
    EXPECT_EQ(r.layout.desc[3].len, 8u);
    EXPECT_TRUE(is_used(r.layout.desc[4].flags, true));
    EXPECT_EQ(r.layout.desc[4].id, 4);
    EXPECT_TRUE(is_used(r.layout.desc[5].flags, true));
    EXPECT_EQ(r.layout.desc[5].id, 5);
    EXPECT_EQ(r.ring_.published_used_position(), (PackedPosition{6, true}));
}

TEST(PackedRing, without_in_order_every_completion_has_its_own_descriptor) {
    Raw r;
    r.put(0, kData, 8, 0);
    r.put(1, kData, 8, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring_.add_used(0, 1, 0);
    r.ring_.add_used(1, 1, 0);
    r.ring_.publish_used();
    EXPECT_EQ(r.layout.desc[0].id, 0);
    EXPECT_TRUE(is_used(r.layout.desc[1].flags, true));
    EXPECT_EQ(r.layout.desc[1].id, 1);
}

TEST(PackedRing, used_descriptors_flip_their_wrap_bits_after_the_ring_end) {
    Raw r(2);
    ASSERT_EQ(r.ring_.restore_vring_base(0x8001'8001), BaseError::ok);
    r.put(1, kData, 8, 0, N);
    r.put(0, kData, 8, 1, 0, false);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring_.add_used(r.chain.id, r.chain.slots, 0);
    r.ring_.publish_used();
    EXPECT_TRUE(is_used(r.layout.desc[1].flags, true));
    EXPECT_EQ(r.ring_.published_used_position(), (PackedPosition{1, false}));
}

// ---- event suppression ----------------------------------------------------------------

TEST(PackedRing, disable_and_enable_write_the_device_event_flags) {
    Raw r(8, true, /*event_idx=*/false);
    r.ring_.disable_notifications();
    EXPECT_EQ(r.layout.device_event->flags, PackedEventSuppress::kDisable);
    EXPECT_FALSE(r.ring_.enable_notifications());
    EXPECT_EQ(r.layout.device_event->flags, PackedEventSuppress::kEnable);
}

TEST(PackedRing, with_event_idx_enable_asks_for_a_kick_at_the_first_never_popped_slot) {
    Raw r(4, true, /*event_idx=*/true);
    r.put(0, kData, 8, 0, N);
    r.put(1, kData, 8, 0);
    r.put(2, kData, 8, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    const RingPosition mark = r.ring_.position();
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring_.rewind(mark);
    EXPECT_FALSE(r.ring_.enable_notifications());
    EXPECT_EQ(r.layout.device_event->flags, PackedEventSuppress::kDesc);
    EXPECT_EQ(r.layout.device_event->off_wrap, 0x8003);  // slot 3, wrap 1: past the given-back one
}

TEST(PackedRing, with_event_idx_calls_when_the_event_offset_is_across_the_ring_end) {
    Raw r(4, true, true);
    ASSERT_EQ(r.ring_.restore_vring_base(0x8003'8003), BaseError::ok);
    r.put(3, kData, 8, 0);
    r.put(0, kData, 8, 1, 0, false);
    r.put(1, kData, 8, 2, 0, false);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(r.pop(), PopStatus::ok);
    }
    r.layout.driver_event->flags = PackedEventSuppress::kDesc;
    r.layout.driver_event->off_wrap = 0x0001;  // slot 1 of the next lap (wrap 0)
    r.ring_.add_used(0, 1, 0);                 // slot 3
    r.ring_.publish_used();
    EXPECT_TRUE(r.ring_.should_notify());  // the first call is never suppressed
    r.ring_.add_used(1, 1, 0);             // slot 0, wrap 0
    r.ring_.publish_used();
    EXPECT_FALSE(r.ring_.should_notify());
    r.ring_.add_used(2, 1, 0);  // slot 1, wrap 0: the event
    r.ring_.publish_used();
    EXPECT_TRUE(r.ring_.should_notify());
}

TEST(PackedRing, treats_desc_without_event_idx_and_the_reserved_value_as_enable) {
    Raw r(8, true, /*event_idx=*/false);
    for (uint16_t flags : {PackedEventSuppress::kDesc, uint16_t{3}}) {
        r.put(0, kData, 8, 0, 0, r.ring_.avail_position().wrap);
        r.layout.desc[r.ring_.avail_position().index] = r.layout.desc[0];
        ASSERT_EQ(r.pop(), PopStatus::ok);
        r.layout.driver_event->flags = flags;
        r.layout.driver_event->off_wrap = 0x7fff;
        r.ring_.add_used(0, 1, 0);
        r.ring_.publish_used();
        EXPECT_TRUE(r.ring_.should_notify()) << flags;
    }
}

// ---- vring base -----------------------------------------------------------------------

TEST(PackedRing, exports_the_vring_base_in_the_vhost_user_encoding) {
    Raw r(4);
    EXPECT_EQ(r.ring_.vring_base(), 0x8000'8000u);  // avail 0/wrap 1, used 0/wrap 1
    ASSERT_EQ(r.ring_.restore_vring_base(0x0002'8001), BaseError::ok);
    EXPECT_EQ(r.ring_.avail_position(), (PackedPosition{1, true}));
    EXPECT_EQ(r.ring_.used_position(), (PackedPosition{2, false}));
    EXPECT_EQ(r.ring_.vring_base(), 0x0002'8001u);
}

TEST(PackedRing, a_base_with_only_the_avail_half_sets_used_to_avail) {
    Raw r(8);
    ASSERT_EQ(r.ring_.restore_vring_base(0x8000), BaseError::ok);  // what virtio-user sends
    EXPECT_EQ(r.ring_.used_position(), PackedPosition{});
    ASSERT_EQ(r.ring_.restore_vring_base(0x0005), BaseError::ok);
    EXPECT_EQ(r.ring_.used_position(), (PackedPosition{5, false}));
}

TEST(PackedRing, refuses_a_base_out_of_range_and_keeps_its_state) {
    Raw r(8);
    ASSERT_EQ(r.ring_.restore_vring_base(0x8003'8003), BaseError::ok);
    EXPECT_EQ(r.ring_.restore_vring_base(0x8000'8008), BaseError::avail_index_out_of_range);
    EXPECT_EQ(r.ring_.restore_vring_base(0x8008'8000), BaseError::used_index_out_of_range);
    // avail at slot 2 of the second lap, used at slot 1 of the first: 9 slots in flight
    EXPECT_EQ(r.ring_.restore_vring_base(0x8001'0002), BaseError::in_flight_exceeds_ring);
    // used ahead of avail
    EXPECT_EQ(r.ring_.restore_vring_base(0x8004'8003), BaseError::in_flight_exceeds_ring);
    EXPECT_EQ(r.ring_.vring_base(), 0x8003'8003u);
}

TEST(PackedRing, a_base_can_be_validated_before_the_ring_exists) {
    EXPECT_EQ(validate_packed_vring_base(0x8000, 3), BaseError::ok);
    EXPECT_EQ(validate_packed_vring_base(0x0002'8002, 3), BaseError::ok);
    EXPECT_EQ(validate_packed_vring_base(0x8003, 3), BaseError::avail_index_out_of_range);
    EXPECT_EQ(validate_packed_vring_base(0x8000, 0), BaseError::avail_index_out_of_range);
}

TEST(PackedRing, names_every_pop_status) {
    for (int s = 0; s <= static_cast<int>(PopStatus::buffer_unmapped); ++s) {
        EXPECT_NE(std::string(to_string(static_cast<PopStatus>(s))), "unknown pop status") << s;
    }
    EXPECT_FALSE(breaks_ring(PopStatus::too_many_segments));
    EXPECT_TRUE(breaks_ring(PopStatus::descriptor_not_available));
}

}  // namespace
}  // namespace vnet::virtio
