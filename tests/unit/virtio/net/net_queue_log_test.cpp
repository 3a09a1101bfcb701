// The virtio-net queues while the front end logs: RX marks the buffers it
// filled and the ring areas it was given, TX only the ring areas (it reads
// the guest's buffers, never writes them), and a queue without a log marks
// nothing. Over both ring models.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "unit/virtio/marked_pages.hpp"
#include "unit/virtio/net/net_queue_harness.hpp"
#include "virtio/log/dirty_log.hpp"
#include "virtio/net/net_rx_queue.hpp"
#include "virtio/net/net_tx_queue.hpp"

namespace vnet::virtio {
namespace {

using test::ModelNames;
using test::RingModels;

constexpr uint64_t kPage = DirtyLog::kPageSize;

uint64_t zero_clock() {
    return 0;
}

std::set<uint64_t> marked(const std::vector<uint8_t>& bitmap) {
    return test::marked_pages(bitmap.data(), bitmap.size());
}

template <typename Model>
class NetQueueLogTest : public ::testing::Test {
protected:
    // 256 entries: buffers of cookie c start at buffer_gpa(4c), so cookies
    // 0..15 share one page and 16..31 the next.
    test::RingHarness<Model> ring{256, false};
    packet::QueueCounters counters;
    std::vector<uint8_t> bitmap = std::vector<uint8_t>(1024);  // pages 0..8191
    DirtyLog log{bitmap.data(), bitmap.size(), nullptr};
    // Where the test says the ring's device-written area is: one page of its own.
    static constexpr uint64_t kRingAreaGpa = test::RingHarness<Model>::kGpa;

    NetQueueConfig logging_config() {
        NetQueueConfig c = test::version_1_config();
        RingLogAreas areas;
        areas.ranges[0] = {kRingAreaGpa, 16};
        c.log = QueueLog(&log, &ring.memory.map(), areas);
        return c;
    }
    uint64_t page_of_cookie(uint32_t cookie) const { return ring.buffer_gpa(cookie * 4) / kPage; }
};
TYPED_TEST_SUITE(NetQueueLogTest, RingModels, ModelNames);

TYPED_TEST(NetQueueLogTest, rx_marks_the_buffers_it_filled_and_the_ring_and_nothing_else) {
    this->ring.post(0, 32, /*readable=*/0, /*writable=*/1);
    NetRxQueue rx(this->counters, &zero_clock);
    rx.start(AnyDeviceRing(std::move(this->ring.device)), this->logging_config());
    std::span<const iovec> buffer;
    ASSERT_TRUE(rx.next_buffer(64, &buffer));
    std::memset(buffer[0].iov_base, 0xab, 60);
    rx.commit_buffer(60);
    rx.flush();
    ASSERT_EQ(this->ring.reclaim_all().size(), 1u);
    ASSERT_NE(this->page_of_cookie(0), this->page_of_cookie(16));
    EXPECT_EQ(marked(this->bitmap),
              (std::set<uint64_t>{this->kRingAreaGpa / kPage, this->page_of_cookie(0)}))
        << "the 31 buffers popped but given back were not written";
}

TYPED_TEST(NetQueueLogTest, rx_without_a_log_marks_nothing) {
    this->ring.post(0, 4, 0, 1);
    NetRxQueue rx(this->counters, &zero_clock);
    rx.start(AnyDeviceRing(std::move(this->ring.device)), test::version_1_config());
    std::span<const iovec> buffer;
    ASSERT_TRUE(rx.next_buffer(64, &buffer));
    rx.commit_buffer(60);
    rx.flush();
    EXPECT_TRUE(marked(this->bitmap).empty());
}

TYPED_TEST(NetQueueLogTest, rx_marks_the_ring_when_it_arms_kicks_and_when_it_finishes) {
    NetRxQueue rx(this->counters, &zero_clock);
    rx.start(AnyDeviceRing(std::move(this->ring.device)), this->logging_config());
    rx.arm_kicks();  // writes flags / the event area
    EXPECT_EQ(marked(this->bitmap), (std::set<uint64_t>{this->kRingAreaGpa / kPage}));
    std::fill(this->bitmap.begin(), this->bitmap.end(), 0);
    rx.finish();
    EXPECT_EQ(marked(this->bitmap), (std::set<uint64_t>{this->kRingAreaGpa / kPage}));
    rx.stop();
    std::fill(this->bitmap.begin(), this->bitmap.end(), 0);
    rx.finish();  // after a stop the log is gone with the memory
    EXPECT_TRUE(marked(this->bitmap).empty());
}

TYPED_TEST(NetQueueLogTest, tx_marks_the_ring_but_never_the_buffers_it_read) {
    this->ring.post(16, 1, /*readable=*/1);
    NetTxQueue tx(this->counters);
    tx.start(AnyDeviceRing(std::move(this->ring.device)), this->logging_config());
    packet::PacketBurst burst;
    ASSERT_EQ(tx.receive_burst(burst, 64).taken, 1);
    EXPECT_TRUE(marked(this->bitmap).empty()) << "nothing written yet";
    tx.complete_burst(burst, 1);
    EXPECT_EQ(marked(this->bitmap), (std::set<uint64_t>{this->kRingAreaGpa / kPage}));
}

}  // namespace
}  // namespace vnet::virtio
