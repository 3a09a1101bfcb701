// Inflight tracking of a split ring (vhost-user.rst "Inflight I/O
// tracking"): the layouts against the spec, what the ring records as it
// takes and completes chains, and the reconnect procedure at every point a
// back end can die between the publish steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <vector>

#include "unit/virtio/ring_harness.hpp"
#include "virtio/inflight/inflight_layout.hpp"
#include "virtio/inflight/split_inflight.hpp"

namespace vnet::virtio {
namespace {

using test::RingHarness;
using test::SplitModel;

// One queue's region in 8-aligned zeroed memory, as a fresh memfd is.
struct Region {
    explicit Region(uint16_t queue_size) : words(split_inflight_queue_bytes(queue_size) / 8, 0) {}
    QueueRegionSplit* header() { return reinterpret_cast<QueueRegionSplit*>(words.data()); }
    DescStateSplit& desc(uint16_t i) { return split_inflight_descs(header())[i]; }
    std::vector<uint64_t> words;
};

TEST(InflightLayout, matches_the_spec_byte_for_byte) {
    EXPECT_EQ(sizeof(DescStateSplit), 16u);
    EXPECT_EQ(offsetof(DescStateSplit, inflight), 0u);
    EXPECT_EQ(offsetof(DescStateSplit, next), 6u);
    EXPECT_EQ(offsetof(DescStateSplit, counter), 8u);
    EXPECT_EQ(sizeof(QueueRegionSplit), 16u);
    EXPECT_EQ(offsetof(QueueRegionSplit, features), 0u);
    EXPECT_EQ(offsetof(QueueRegionSplit, version), 8u);
    EXPECT_EQ(offsetof(QueueRegionSplit, desc_num), 10u);
    EXPECT_EQ(offsetof(QueueRegionSplit, last_batch_head), 12u);
    EXPECT_EQ(offsetof(QueueRegionSplit, used_idx), 14u);
    EXPECT_EQ(sizeof(DescStatePacked), 32u);
    EXPECT_EQ(offsetof(DescStatePacked, id), 16u);
    EXPECT_EQ(offsetof(DescStatePacked, len), 20u);
    EXPECT_EQ(offsetof(DescStatePacked, addr), 24u);
}

TEST(InflightLayout, queue_regions_are_rounded_to_64_bytes_as_qemu_and_dpdk_size_them) {
    // align(16 * n + 16, 64) and align(32 * n + 29, 64).
    EXPECT_EQ(split_inflight_queue_bytes(1), 64u);
    EXPECT_EQ(split_inflight_queue_bytes(2), 64u);
    EXPECT_EQ(split_inflight_queue_bytes(4), 128u);
    EXPECT_EQ(split_inflight_queue_bytes(256), 4160u);
    EXPECT_EQ(split_inflight_queue_bytes(32768), 524352u);
    EXPECT_EQ(packed_inflight_queue_bytes(1), 64u);
    EXPECT_EQ(packed_inflight_queue_bytes(256), 8256u);
}

TEST(SplitInflight, a_fresh_region_is_initialised_at_recovery_and_resumes_nothing) {
    Region r(8);
    SplitInflight t(r.header(), 8);
    std::vector<uint16_t> resume{99};
    ASSERT_EQ(t.recover(5, &resume), InflightError::ok);
    EXPECT_TRUE(resume.empty());
    EXPECT_EQ(r.header()->version, 1);
    EXPECT_EQ(r.header()->desc_num, 8);
    EXPECT_EQ(r.header()->used_idx, 5);
}

TEST(SplitInflight, take_and_publish_follow_the_spec_order) {
    Region r(8);
    SplitInflight t(r.header(), 8);
    std::vector<uint16_t> resume;
    ASSERT_EQ(t.recover(0, &resume), InflightError::ok);
    t.take(3);
    t.take(5);
    EXPECT_EQ(r.desc(3).inflight, 1);
    EXPECT_EQ(r.desc(3).counter, 1u);
    EXPECT_EQ(r.desc(5).counter, 2u);
    t.add_used(5);
    t.add_used(3);
    EXPECT_EQ(r.header()->last_batch_head, 3);
    EXPECT_EQ(r.desc(3).next, 5);
    EXPECT_EQ(r.desc(5).inflight, 1) << "in flight until used->idx is published";
    t.published(2);
    EXPECT_EQ(r.desc(3).inflight, 0);
    EXPECT_EQ(r.desc(5).inflight, 0);
    EXPECT_EQ(r.header()->used_idx, 2);
}

// Heads 0, 1, 2 taken; head 1 completed; the back end dies at each step.
class SplitInflightCrash : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(t.recover(0, &resume), InflightError::ok);
        t.take(0);
        t.take(1);
        t.take(2);
        t.add_used(1);
    }
    std::vector<uint16_t> recover_after_crash(uint16_t ring_used_idx) {
        SplitInflight next(r.header(), 8);
        std::vector<uint16_t> out;
        EXPECT_EQ(next.recover(ring_used_idx, &out), InflightError::ok);
        EXPECT_EQ(r.header()->used_idx, ring_used_idx);
        return out;
    }
    Region r{8};
    SplitInflight t{r.header(), 8};
    std::vector<uint16_t> resume;
};

TEST_F(SplitInflightCrash, before_used_idx_is_stored_the_completed_head_is_resumed_too) {
    // The guest never saw head 1's used entry: it must be done again.
    EXPECT_EQ(recover_after_crash(0), (std::vector<uint16_t>{0, 1, 2}));
}

TEST_F(SplitInflightCrash, after_used_idx_but_before_the_flags_are_cleared_the_batch_is_replayed) {
    EXPECT_EQ(recover_after_crash(1), (std::vector<uint16_t>{0, 2}));
}

TEST_F(SplitInflightCrash, halfway_through_clearing_the_flags_the_batch_is_replayed) {
    t.add_used(0);           // a batch of two: 1 then 0
    r.desc(0).inflight = 0;  // the first flag cleared, then death
    EXPECT_EQ(recover_after_crash(2), (std::vector<uint16_t>{2}));
}

TEST_F(SplitInflightCrash, after_the_publish_completed_only_the_others_are_resumed) {
    t.published(1);
    EXPECT_EQ(recover_after_crash(1), (std::vector<uint16_t>{0, 2}));
}

TEST(SplitInflight, resumes_in_counter_order_not_index_order) {
    Region r(8);
    SplitInflight t(r.header(), 8);
    std::vector<uint16_t> resume;
    ASSERT_EQ(t.recover(0, &resume), InflightError::ok);
    for (uint16_t head : {6, 2, 7, 0}) {
        t.take(head);
    }
    SplitInflight next(r.header(), 8);
    ASSERT_EQ(next.recover(0, &resume), InflightError::ok);
    EXPECT_EQ(resume, (std::vector<uint16_t>{6, 2, 7, 0}));
    next.take(1);
    EXPECT_EQ(r.desc(1).counter, 5u) << "new takes count on after the resumed ones";
}

TEST(SplitInflight, refuses_a_region_that_does_not_fit_the_ring) {
    std::vector<uint16_t> resume;
    Region r(8);
    r.header()->version = 2;
    EXPECT_EQ(SplitInflight(r.header(), 8).recover(0, &resume), InflightError::version_unknown);
    r.header()->version = 1;
    r.header()->desc_num = 16;
    EXPECT_EQ(SplitInflight(r.header(), 8).recover(0, &resume), InflightError::size_mismatch);
    r.header()->desc_num = 8;
    r.header()->used_idx = 0;
    EXPECT_EQ(SplitInflight(r.header(), 8).recover(9, &resume), InflightError::batch_too_long);
    r.header()->last_batch_head = 8;
    EXPECT_EQ(SplitInflight(r.header(), 8).recover(1, &resume), InflightError::batch_list_invalid);
}

// The ring with a tracker: a queue takes N chains, completes M, dies; the
// next ring resumes exactly the N - M others, oldest first, before anything
// new, and the driver sees every chain completed exactly once.
TEST(SplitDeviceRingInflight, resumes_exactly_the_chains_taken_and_not_completed) {
    RingHarness<SplitModel> h(8, false);
    Region r(8);
    std::vector<uint16_t> resume;
    SplitInflight first(r.header(), 8);
    ASSERT_EQ(first.recover(0, &resume), InflightError::ok);
    h.device.track_inflight(first, resume);

    h.post(0, 5);
    PoppedChain c[5];
    for (auto& chain : c) {
        ASSERT_EQ(h.pop(chain), PopStatus::ok);
    }
    h.complete(c[3]);
    h.complete(c[1]);
    h.device.publish_used();
    std::multiset<uint32_t> completed;
    for (const auto& done : h.reclaim_all()) {
        completed.insert(done.cookie);
    }
    ASSERT_EQ(completed, (std::multiset<uint32_t>{1, 3}));

    // Death. The next back end starts at the used index, as the device does.
    const uint16_t used = std::atomic_ref<uint16_t>(h.driver->layout().used->idx).load();
    SplitInflight second(r.header(), 8);
    ASSERT_EQ(second.recover(used, &resume), InflightError::ok);
    EXPECT_EQ(resume, (std::vector<uint16_t>{c[0].id, c[2].id, c[4].id}));
    h.device = SplitModel::make_device(*h.driver, h.config);
    ASSERT_EQ(h.device.restore_vring_base(used), BaseError::ok);
    h.device.track_inflight(second, resume);

    h.post(5, 2);  // new work behind the resumed chains
    std::vector<uint16_t> order;
    PoppedChain chain;
    while (h.pop(chain) == PopStatus::ok) {
        order.push_back(chain.id);
        h.complete(chain);
    }
    h.device.publish_used();
    ASSERT_EQ(order.size(), 5u);
    EXPECT_EQ(std::vector<uint16_t>(order.begin(), order.begin() + 3),
              (std::vector<uint16_t>{c[0].id, c[2].id, c[4].id}));
    for (const auto& done : h.reclaim_all()) {
        completed.insert(done.cookie);
    }
    EXPECT_EQ(completed, (std::multiset<uint32_t>{0, 1, 2, 3, 4, 5, 6}))
        << "each chain completed exactly once";
    for (uint16_t i = 0; i < 8; ++i) {
        EXPECT_EQ(r.desc(i).inflight, 0) << "head " << i;
    }
}

TEST(SplitDeviceRingInflight, a_rewound_chain_is_no_longer_in_flight_but_a_resumed_one_stays) {
    RingHarness<SplitModel> h(8, false);
    Region r(8);
    std::vector<uint16_t> resume;
    SplitInflight first(r.header(), 8);
    ASSERT_EQ(first.recover(0, &resume), InflightError::ok);
    h.device.track_inflight(first, resume);
    h.post(0, 2);
    PoppedChain a;
    PoppedChain b;
    ASSERT_EQ(h.pop(a), PopStatus::ok);
    const RingPosition before_b = h.device.position();
    ASSERT_EQ(h.pop(b), PopStatus::ok);
    EXPECT_EQ(r.desc(b.id).inflight, 1);
    h.device.rewind(before_b);
    EXPECT_EQ(r.desc(b.id).inflight, 0) << "given back unused (RX): nothing to resume";
    EXPECT_EQ(r.desc(a.id).inflight, 1);

    // Death with `a` in flight; the next ring gives `a` back before using it.
    SplitInflight second(r.header(), 8);
    ASSERT_EQ(second.recover(0, &resume), InflightError::ok);
    ASSERT_EQ(resume, (std::vector<uint16_t>{a.id}));
    h.device = SplitModel::make_device(*h.driver, h.config);
    h.device.track_inflight(second, resume);
    const RingPosition start = h.device.position();
    PoppedChain again;
    ASSERT_EQ(h.pop(again), PopStatus::ok);
    EXPECT_EQ(again.id, a.id);
    h.device.rewind(start);
    EXPECT_EQ(r.desc(a.id).inflight, 1) << "a resumed chain stays in flight until completed";
    ASSERT_EQ(h.pop(again), PopStatus::ok);
    EXPECT_EQ(again.id, a.id);
}

TEST(SplitDeviceRingInflight, resumed_heads_are_handed_out_once_even_when_the_avail_index_wraps) {
    RingHarness<SplitModel> h(8, false);
    Region r(8);
    std::vector<uint16_t> resume;
    SplitInflight first(r.header(), 8);
    ASSERT_EQ(first.recover(0, &resume), InflightError::ok);
    h.device.track_inflight(first, resume);
    h.post(0, 2);
    PoppedChain a;
    PoppedChain b;
    ASSERT_EQ(h.pop(a), PopStatus::ok);
    ASSERT_EQ(h.pop(b), PopStatus::ok);
    // Death with both in flight; the next ring resumes them and completes them.
    SplitInflight second(r.header(), 8);
    ASSERT_EQ(second.recover(0, &resume), InflightError::ok);
    ASSERT_EQ(resume.size(), 2u);
    h.device = SplitModel::make_device(*h.driver, h.config);
    h.device.track_inflight(second, resume);
    ASSERT_EQ(h.pop_and_complete_all(), 2u);
    ASSERT_EQ(h.reclaim_all().size(), 2u);
    // The free-running avail index comes round to the resumed positions again: what is popped
    // there is what the driver put there, not the resumed heads a second time.
    uint32_t popped = 0;
    while (popped < 65536 + 8) {
        h.post(0, 3);
        PoppedChain chain;
        while (h.pop(chain) == PopStatus::ok) {
            const uint16_t at = static_cast<uint16_t>(h.device.split().last_avail_idx() - 1);
            ASSERT_EQ(chain.id, h.driver->layout().avail->ring[at % 8]) << "at avail " << at;
            h.complete(chain);
            ++popped;
        }
        h.device.publish_used();
        ASSERT_EQ(h.reclaim_all().size(), 3u);  // throws on a used id not in flight
    }
}

}  // namespace
}  // namespace vnet::virtio
