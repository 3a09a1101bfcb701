// The one placement rule: which worker runs queue pair q of cross-connect k.
#include <gtest/gtest.h>

#include "dataplane/placement.hpp"

namespace vnet::dataplane {
namespace {

TEST(Placement, one_worker_runs_everything) {
    Placement p(1);
    EXPECT_EQ(p.worker_for(0, 0), 0u);
    EXPECT_EQ(p.worker_for(3, 7), 0u);
}

TEST(Placement, queue_pairs_of_one_vm_alternate_over_two_workers) {
    Placement p(2);
    EXPECT_EQ(p.worker_for(0, 0), 0u);
    EXPECT_EQ(p.worker_for(0, 1), 1u);
    EXPECT_EQ(p.worker_for(0, 2), 0u);
    EXPECT_EQ(p.worker_for(0, 3), 1u);
}

TEST(Placement, single_queue_vms_spread_over_the_workers_too) {
    Placement p(2);
    EXPECT_EQ(p.worker_for(0, 0), 0u);
    EXPECT_EQ(p.worker_for(1, 0), 1u);
    EXPECT_EQ(p.worker_for(2, 0), 0u);
}

TEST(Placement, zero_workers_means_one) {
    EXPECT_EQ(Placement(0).workers(), 1u);
    EXPECT_EQ(Placement(0).worker_for(5, 5), 0u);
}

}  // namespace
}  // namespace vnet::dataplane
