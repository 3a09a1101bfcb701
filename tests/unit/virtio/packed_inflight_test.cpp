// Inflight tracking of a packed ring (vhost-user.rst "Inflight I/O
// tracking", packed virtqueue): the layout against the spec, what the ring
// records as it takes, gives back and completes chains, the reconnect
// procedure at every point a back end can die between the publish steps
// (with wrap counters, chains of several descriptors and out-of-order
// completion), and every hostile region with its exact error.
//
// A "life" is one back end: a PackedRing with a PackedInflight over the same
// ring and region memory. A crash is dropping the ring without a word; the
// next life recovers the region and the driver's ring as the dead one left
// them.
#include "virtio/inflight/packed_inflight.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "frontend/raw_packed_ring_writer.hpp"
#include "unit/virtio/test_ring.hpp"
#include "virtio/inflight/inflight_layout.hpp"
#include "virtio/ring/packed_ring.hpp"

namespace vnet::virtio {
namespace {

using test::TestGuestMemory;

constexpr uint64_t kRingGpa = 0x10000;
constexpr uint64_t kData = 0x100000;
constexpr uint16_t N = PackedDesc::kFlagNext;
constexpr uint16_t W = PackedDesc::kFlagWrite;
constexpr uint16_t I = PackedDesc::kFlagIndirect;

struct Rig {
    explicit Rig(uint16_t queue_size = 8)
        : size(queue_size),
          words(packed_inflight_queue_bytes(size) / 8, 0),
          writer(frontend::carve_packed_ring_layout(
              std::span<std::byte>(reinterpret_cast<std::byte*>(ring_mem),
                                   frontend::packed_ring_storage_bytes(size)),
              size)),
          layout{writer.layout().desc, writer.layout().driver_event, writer.layout().device_event,
                 size} {
        init_packed_inflight_region(header(), size);  // as GET_INFLIGHT_FD makes it
    }

    QueueRegionPacked* header() { return reinterpret_cast<QueueRegionPacked*>(words.data()); }
    DescStatePacked& desc(uint16_t i) { return packed_inflight_descs(header())[i]; }
    PackedPosition region_used() {
        return PackedPosition{header()->used_idx, header()->used_wrap_counter != 0};
    }

    // A new back end over the same memory: recovers the region and tracks.
    InflightError start(bool fresh = false, uint32_t base = 0x80008000) {
        ring = std::make_unique<PackedRing>(layout, RingConfig{&mem.map(), true, false, false});
        EXPECT_EQ(ring->restore_vring_base(base), BaseError::ok);
        PackedInflight t(header(), size);
        resumed = PackedResume{};
        const InflightError e =
            t.recover(layout.desc, PackedPosition::decode(static_cast<uint16_t>(base >> 16)), fresh,
                      &resumed);
        if (e == InflightError::ok) {
            ring->track_inflight(t, resumed);
        }
        return e;
    }

    // The driver makes a chain of `n` descriptors available from `at`, buffer `id`; the k-th
    // descriptor is 64 * k bytes at kData + 256 * id + 64 * k (so a copy says whose it is).
    PackedPosition avail(PackedPosition at, uint16_t id, uint16_t n = 1) {
        for (uint16_t k = 0; k < n; ++k) {
            writer.put(at.index, buffer(id, k), 64u * (k + 1), id, k + 1 < n ? N : W, at.wrap);
            at = advance(at, 1, size);
        }
        return at;
    }
    static uint64_t buffer(uint16_t id, uint16_t k) { return kData + 256u * id + 64u * k; }

    PopStatus pop() { return ring->pop(std::span<iovec>(iov.data(), iov.size()), chain); }
    // Pops and completes one chain, published at once.
    void pop_and_complete() {
        ASSERT_EQ(pop(), PopStatus::ok);
        ring->add_used(chain.id, chain.slots, 1);
        ring->publish_used();
    }
    // What the driver would see at its next used slot.
    bool used_at(PackedPosition p) { return is_used(layout.desc[p.index].flags, p.wrap); }
    std::vector<uint16_t> resumed_ids() const {
        std::vector<uint16_t> ids;
        for (const auto& c : resumed.chains) {
            ids.push_back(c.id);
        }
        return ids;
    }

    uint16_t size;
    TestGuestMemory mem;
    uint8_t* ring_mem = mem.add_region(kRingGpa, 0x80000);
    uint8_t* data = mem.add_region(kData, 0x20000);
    std::vector<uint64_t> words;  // the region, 8-aligned, zeroed like a fresh memfd
    frontend::RawPackedRingWriter writer;
    PackedRingLayout layout;
    std::unique_ptr<PackedRing> ring;
    PackedResume resumed;
    PoppedChain chain;
    std::array<iovec, 16> iov{};
};

// ---- layout ---------------------------------------------------------------------------

TEST(PackedInflightLayout, matches_the_spec_byte_for_byte) {
    EXPECT_EQ(offsetof(QueueRegionPacked, features), 0u);
    EXPECT_EQ(offsetof(QueueRegionPacked, version), 8u);
    EXPECT_EQ(offsetof(QueueRegionPacked, desc_num), 10u);
    EXPECT_EQ(offsetof(QueueRegionPacked, free_head), 12u);
    EXPECT_EQ(offsetof(QueueRegionPacked, old_free_head), 14u);
    EXPECT_EQ(offsetof(QueueRegionPacked, used_idx), 16u);
    EXPECT_EQ(offsetof(QueueRegionPacked, old_used_idx), 18u);
    EXPECT_EQ(offsetof(QueueRegionPacked, used_wrap_counter), 20u);
    EXPECT_EQ(offsetof(QueueRegionPacked, old_used_wrap_counter), 21u);
    EXPECT_EQ(sizeof(QueueRegionPacked), 32u);  // desc[] at 8-aligned 32, after 29 bytes
    EXPECT_EQ(offsetof(DescStatePacked, next), 2u);
    EXPECT_EQ(offsetof(DescStatePacked, last), 4u);
    EXPECT_EQ(offsetof(DescStatePacked, num), 6u);
    EXPECT_EQ(packed_inflight_queue_bytes(3), 128u);  // align(29 + 96, 64): any size, not 2^n
}

TEST(PackedInflightLayout, a_fresh_region_has_every_entry_free_in_order_at_wrap_1) {
    Rig r(5);
    EXPECT_EQ(r.header()->version, 1);
    EXPECT_EQ(r.header()->desc_num, 5);
    EXPECT_EQ(r.header()->free_head, 0);
    EXPECT_EQ(r.header()->used_wrap_counter, 1);
    EXPECT_EQ(r.header()->old_used_wrap_counter, 1);
    for (uint16_t i = 0; i < 5; ++i) {
        EXPECT_EQ(r.desc(i).next, i + 1);
    }
}

// ---- take and complete ----------------------------------------------------------------

TEST(PackedInflight, a_taken_chain_is_copied_entry_by_entry_in_free_list_order) {
    Rig r;
    ASSERT_EQ(r.start(/*fresh=*/true), InflightError::ok);
    r.avail({0, true}, /*id=*/5, /*n=*/3);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.desc(0).inflight, 1);
    EXPECT_EQ(r.desc(0).num, 3);
    EXPECT_EQ(r.desc(0).last, 2);
    EXPECT_EQ(r.desc(0).counter, 1u);
    for (uint16_t k = 0; k < 3; ++k) {
        EXPECT_EQ(r.desc(k).addr, Rig::buffer(5, k));
        EXPECT_EQ(r.desc(k).len, 64u * (k + 1));
        EXPECT_EQ(r.desc(k).id, 5);
        EXPECT_EQ(r.desc(k).inflight, k == 0 ? 1 : 0);
    }
    EXPECT_EQ(r.desc(0).flags & N, N);
    EXPECT_EQ(r.desc(2).flags & N, 0);
    EXPECT_EQ(r.header()->free_head, 3);
    EXPECT_EQ(r.header()->old_free_head, 3);
}

TEST(PackedInflight, a_completed_chain_goes_back_on_the_free_list_and_moves_both_used_positions) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    r.avail({0, true}, 5, 3);
    r.pop_and_complete();
    EXPECT_EQ(r.desc(0).inflight, 0);
    EXPECT_EQ(r.header()->free_head, 0);
    EXPECT_EQ(r.header()->old_free_head, 0);
    EXPECT_EQ(r.desc(2).next, 3);  // the chain's last entry links to the old free list
    EXPECT_EQ(r.header()->used_idx, 3);
    EXPECT_EQ(r.header()->old_used_idx, 3);
    EXPECT_EQ(r.header()->used_wrap_counter, 1);
}

TEST(PackedInflight, counters_order_the_takes) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at{0, true};
    at = r.avail(at, 3, 2);
    at = r.avail(at, 1, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.desc(0).counter, 1u);  // entries 0-1: chain 3
    EXPECT_EQ(r.desc(2).counter, 2u);  // entry 2: chain 1
}

TEST(PackedInflight, a_second_chain_with_an_id_in_flight_breaks_the_ring) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at = r.avail({0, true}, 4);
    r.avail(at, 4);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.pop(), PopStatus::id_in_flight);
}

TEST(PackedInflight, given_back_chains_are_free_again_and_not_resumed) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at = r.avail({0, true}, 0, 2);
    at = r.avail(at, 1, 3);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    const RingPosition before = r.ring->position();
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring->rewind(before);
    EXPECT_EQ(r.desc(2).inflight, 0);
    EXPECT_EQ(r.header()->old_free_head, 2);
    ASSERT_EQ(r.start(), InflightError::ok);  // crash
    EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{0}));
    EXPECT_EQ(r.resumed.slots, 2u);
}

// ---- crash and recover ----------------------------------------------------------------

TEST(PackedInflight, a_crash_with_chains_taken_resumes_them_oldest_first_before_new_ones) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at{0, true};
    at = r.avail(at, 6, 2);
    at = r.avail(at, 2, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    at = r.avail(at, 7, 1);  // made available, never taken
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{6, 2}));
    EXPECT_EQ(r.resumed.used, (PackedPosition{0, true}));
    EXPECT_EQ(r.resumed.slots, 3u);
    // Handed out again from the copies, with their descriptors, then the new one.
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 6);
    EXPECT_EQ(r.chain.slots, 2);
    EXPECT_EQ(r.iov[1].iov_base, r.data + 256 * 6 + 64);
    EXPECT_EQ(r.iov[1].iov_len, 128u);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 2);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 7);
    EXPECT_EQ(r.pop(), PopStatus::empty);
}

TEST(PackedInflight, completions_out_of_order_leave_used_ahead_and_the_rest_resumed) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at{0, true};
    at = r.avail(at, 0, 2);
    at = r.avail(at, 1, 1);
    at = r.avail(at, 2, 3);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(r.pop(), PopStatus::ok);
    }
    r.ring->add_used(1, 1, 0);  // the middle one first
    r.ring->publish_used();
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{0, 2}));
    EXPECT_EQ(r.resumed.used, (PackedPosition{1, true}));
    EXPECT_EQ(r.resumed.slots, 5u);  // avail resumes at slot 6, where the dead one stopped
    r.avail(at, 3, 1);
    for (uint16_t id : {0, 2, 3}) {
        ASSERT_EQ(r.pop(), PopStatus::ok);
        EXPECT_EQ(r.chain.id, id);
        r.ring->add_used(r.chain.id, r.chain.slots, 0);
    }
    r.ring->publish_used();
    EXPECT_EQ(r.layout.desc[1].id, 0);  // used descriptors from where the driver expects them
    EXPECT_EQ(r.layout.desc[3].id, 2);
    EXPECT_EQ(r.layout.desc[6].id, 3);
    EXPECT_TRUE(r.used_at({1, true}));
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_TRUE(r.resumed.chains.empty());
    EXPECT_EQ(r.resumed.used, (PackedPosition{7, true}));
}

// The publish of one burst of two chains, stopped after each of its steps,
// with the tracker driven as PackedRing::publish_used drives it.
enum class Stop { staged, region_used, head_flags, inflight_cleared, published };

void crash_during_publish(Stop stop, bool expect_resumed) {
    Rig r;
    PackedInflight t(r.header(), r.size);
    PackedResume none;
    ASSERT_EQ(t.recover(r.layout.desc, PackedPosition{}, true, &none), InflightError::ok);
    PackedPosition at{0, true};
    at = r.avail(at, 0, 2);
    r.avail(at, 1, 1);
    ASSERT_EQ(t.take(r.layout.desc, {0, true}, 2, 0), PackedInflight::TakeResult::ok);
    ASSERT_EQ(t.take(r.layout.desc, {2, true}, 1, 1), PackedInflight::TakeResult::ok);
    // add_used: the ring writes the burst's second used descriptor whole, the head's flags wait.
    r.layout.desc[2].id = 1;
    r.layout.desc[2].flags = used_flags_for(true);
    r.layout.desc[0].id = 0;
    t.add_used(0);
    t.add_used(1);
    if (stop >= Stop::region_used) {
        t.prepare_publish({3, true});
    }
    if (stop >= Stop::head_flags) {
        r.layout.desc[0].flags = used_flags_for(true);
    }
    if (stop >= Stop::inflight_cleared) {
        t.published();
        if (stop == Stop::inflight_cleared) {
            r.header()->old_used_idx = 0;  // the last store, old_used_*, never happened
        }
    }
    ASSERT_EQ(r.start(), InflightError::ok);
    if (expect_resumed) {
        EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{0, 1}));
        EXPECT_EQ(r.resumed.used, (PackedPosition{0, true}));
        EXPECT_EQ(r.resumed.slots, 3u);
        // The unpublished used descriptor the dead one wrote must not show to the driver.
        EXPECT_FALSE(r.used_at({2, true}));
    } else {
        EXPECT_TRUE(r.resumed.chains.empty());
        EXPECT_EQ(r.resumed.used, (PackedPosition{3, true}));
        EXPECT_TRUE(r.used_at({2, true}));
    }
    EXPECT_EQ(r.header()->free_head, r.header()->old_free_head);
    EXPECT_EQ(r.header()->used_idx, r.header()->old_used_idx);
    EXPECT_EQ(r.ring->untaken_chains(), expect_resumed ? 2 : 0);
}

TEST(PackedInflight, a_crash_before_the_region_moves_used_resubmits_the_burst) {
    crash_during_publish(Stop::staged, true);
}
TEST(PackedInflight, a_crash_after_used_idx_but_before_the_head_flags_rolls_back) {
    crash_during_publish(Stop::region_used, true);
}
TEST(PackedInflight, a_crash_after_the_head_flags_commits_the_burst) {
    crash_during_publish(Stop::head_flags, false);
}
TEST(PackedInflight, a_crash_before_old_used_idx_commits_the_burst) {
    crash_during_publish(Stop::inflight_cleared, false);
}
TEST(PackedInflight, a_finished_publish_resumes_nothing) {
    crash_during_publish(Stop::published, false);
}

TEST(PackedInflight, a_crash_in_the_middle_of_a_take_leaves_the_chain_to_be_taken_again) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    r.avail({0, true}, 3, 2);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.header()->old_free_head = 0;  // the take's last store never happened
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_TRUE(r.resumed.chains.empty());
    EXPECT_EQ(r.desc(0).inflight, 0);   // on the free list again
    ASSERT_EQ(r.pop(), PopStatus::ok);  // from the ring, where the driver left it
    EXPECT_EQ(r.chain.id, 3);
}

TEST(PackedInflight, wrap_counters_survive_a_crash_across_the_end_of_the_ring) {
    Rig r(4);
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at{0, true};
    for (uint16_t id = 0; id < 3; ++id) {  // slots 0-2 used
        at = r.avail(at, id);
        r.pop_and_complete();
    }
    at = r.avail(at, 0, 2);  // slot 3 and slot 0 of the next lap
    ASSERT_EQ(r.pop(), PopStatus::ok);
    at = r.avail(at, 1);  // slot 1, lap 2
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring->add_used(0, 2, 0);
    r.ring->publish_used();
    EXPECT_EQ(r.region_used(), (PackedPosition{1, false}));
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{1}));
    EXPECT_EQ(r.resumed.used, (PackedPosition{1, false}));
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.ring->add_used(r.chain.id, r.chain.slots, 0);
    r.ring->publish_used();
    EXPECT_TRUE(r.used_at({1, false}));
    EXPECT_EQ(r.region_used(), (PackedPosition{2, false}));
}

TEST(PackedInflight, a_burst_of_exactly_a_ring_is_seen_unfinished_though_used_idx_is_unchanged) {
    Rig r(2);
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at = r.avail({0, true}, 0);
    r.avail(at, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    // prepare_publish's store: used back at slot 0, one lap on; old_* not yet.
    r.header()->used_wrap_counter = 0;
    r.header()->free_head = 1;
    r.desc(1).next = 0;
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_EQ(r.resumed_ids(), (std::vector<uint16_t>{0, 1}));  // rolled back
    EXPECT_EQ(r.resumed.used, (PackedPosition{0, true}));
}

TEST(PackedInflight, a_rewind_into_the_resumed_window_hands_the_same_chain_out_again) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedPosition at = r.avail({0, true}, 4, 2);
    at = r.avail(at, 5, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.start(), InflightError::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    const RingPosition before = r.ring->position();
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 5);
    r.avail(at, 6, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 6);
    r.ring->rewind(before);  // gives back 6 (taken) and un-hands 5 (still in flight)
    EXPECT_EQ(r.desc(3).inflight, 0);
    EXPECT_EQ(r.desc(2).inflight, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 5);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 6);
}

TEST(PackedInflight, resumed_chains_are_work_for_enable_notifications) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    r.avail({0, true}, 4, 1);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_TRUE(r.ring->next_available());
    EXPECT_TRUE(r.ring->enable_notifications());
    EXPECT_EQ(r.ring->untaken_chains(), 1);
}

TEST(PackedInflight, a_resumed_chain_whose_next_flags_disagree_with_its_length_breaks_the_ring) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    r.avail({0, true}, 4, 2);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    r.desc(1).flags |= N;
    ASSERT_EQ(r.start(), InflightError::ok);
    EXPECT_EQ(r.pop(), PopStatus::resumed_chain_invalid);
}

TEST(PackedInflight, a_resumed_indirect_chain_is_walked_like_a_ring_one) {
    Rig r;
    ASSERT_EQ(r.start(true), InflightError::ok);
    PackedDesc table[2] = {{kData, 10, 0, 0}, {kData + 64, 20, 0, W}};
    std::memcpy(r.data + 0x1000, table, sizeof table);
    r.writer.put(0, kData + 0x1000, static_cast<uint32_t>(sizeof table), 3, I, true);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    ASSERT_EQ(r.start(), InflightError::ok);
    ASSERT_EQ(r.pop(), PopStatus::ok);
    EXPECT_EQ(r.chain.id, 3);
    EXPECT_EQ(r.chain.readable_segments, 1);
    EXPECT_EQ(r.chain.writable_segments, 1);
}

// ---- hostile regions ------------------------------------------------------------------

// A region with chain 2 (entries 0-1, two descriptors) in flight, left by a crash.
struct Hostile : Rig {
    Hostile() {
        EXPECT_EQ(start(true), InflightError::ok);
        avail({0, true}, 2, 2);
        EXPECT_EQ(pop(), PopStatus::ok);
    }
};

TEST(PackedInflight, a_zeroed_region_is_initialised_from_the_vring_base) {
    Rig r;
    std::fill(r.words.begin(), r.words.end(), 0);
    ASSERT_EQ(r.start(false, 0x00038003), InflightError::ok);
    EXPECT_TRUE(r.resumed.from_base);
    EXPECT_EQ(r.region_used(), (PackedPosition{3, false}));
    EXPECT_EQ(r.header()->version, 1);
}

TEST(PackedInflight, rejects_an_unknown_version) {
    Hostile r;
    r.header()->version = 2;
    EXPECT_EQ(r.start(), InflightError::version_unknown);
}

TEST(PackedInflight, rejects_a_desc_num_that_is_not_the_queue_size) {
    Hostile r;
    r.header()->desc_num = 16;
    EXPECT_EQ(r.start(), InflightError::size_mismatch);
}

TEST(PackedInflight, rejects_a_free_head_beyond_desc_num) {
    Hostile r;
    r.header()->old_free_head = 9;
    EXPECT_EQ(r.start(), InflightError::free_head_out_of_range);
}

TEST(PackedInflight, rejects_a_used_index_or_wrap_counter_out_of_range) {
    Hostile a;
    a.header()->old_used_idx = 8;
    EXPECT_EQ(a.start(), InflightError::used_index_out_of_range);
    Hostile b;
    b.header()->used_wrap_counter = 2;
    EXPECT_EQ(b.start(), InflightError::used_index_out_of_range);
}

TEST(PackedInflight, rejects_a_free_list_that_leaves_the_table_or_loops) {
    Hostile a;
    a.desc(4).next = 9;
    EXPECT_EQ(a.start(), InflightError::free_list_invalid);
    Hostile b;
    b.desc(4).next = 2;
    EXPECT_EQ(b.start(), InflightError::free_list_invalid);
}

TEST(PackedInflight, rejects_a_chain_whose_num_next_or_last_is_out_of_range) {
    Hostile a;
    a.desc(0).num = 0;
    EXPECT_EQ(a.start(), InflightError::chain_invalid);
    Hostile b;
    b.desc(0).num = 9;
    EXPECT_EQ(b.start(), InflightError::chain_invalid);
    Hostile c;
    c.desc(0).next = 8;
    EXPECT_EQ(c.start(), InflightError::chain_invalid);
    Hostile d;
    d.desc(0).last = 0;
    EXPECT_EQ(d.start(), InflightError::chain_invalid);
}

TEST(PackedInflight, rejects_chains_sharing_an_entry_with_the_free_list_or_each_other) {
    Hostile a;
    a.desc(0).next = 2;  // entry 2 is free
    a.desc(0).last = 2;
    EXPECT_EQ(a.start(), InflightError::chains_overlap);
    Hostile b;
    b.desc(1).inflight = 1;  // a second "chain" at the first one's tail
    b.desc(1).num = 1;
    b.desc(1).last = 1;
    b.desc(1).counter = 0;  // sorted first, so the real one finds entry 1 taken
    EXPECT_EQ(b.start(), InflightError::chains_overlap);
}

TEST(PackedInflight, rejects_a_buffer_id_out_of_range_or_in_two_chains) {
    Hostile a;
    a.desc(1).id = 8;
    EXPECT_EQ(a.start(), InflightError::id_invalid);
    Hostile b;
    b.header()->free_head = b.header()->old_free_head = 3;  // entry 2 becomes a chain
    b.desc(2) = DescStatePacked{1, 0, 3, 2, 1, 5, 2, W, 8, kData};
    EXPECT_EQ(b.start(), InflightError::id_invalid);
}

TEST(PackedInflight, rejects_entries_neither_free_nor_in_flight) {
    Hostile r;
    r.header()->free_head = r.header()->old_free_head = 3;  // entry 2 dropped
    EXPECT_EQ(r.start(), InflightError::entries_lost);
}

}  // namespace
}  // namespace vnet::virtio
