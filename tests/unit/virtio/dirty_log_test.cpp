// DirtyLog and QueueLog: page granularity, ranges that span pages, bytes
// and regions, pages beyond the log, and host buffers turned back into
// guest addresses.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "unit/virtio/marked_pages.hpp"
#include "unit/virtio/test_ring.hpp"
#include "virtio/log/dirty_log.hpp"
#include "virtio/log/queue_log.hpp"

namespace vnet::virtio {
namespace {

constexpr uint64_t kPage = DirtyLog::kPageSize;

std::set<uint64_t> marked(const std::vector<uint8_t>& bitmap) {
    return test::marked_pages(bitmap.data(), bitmap.size());
}

TEST(DirtyLog, one_byte_marks_its_page_at_bit_page_mod_8_of_byte_page_div_8) {
    std::vector<uint8_t> bitmap(4);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    log.mark(11 * kPage + 100, 1);
    EXPECT_EQ(bitmap[1], 1u << 3);
    EXPECT_EQ(marked(bitmap), (std::set<uint64_t>{11}));
}

TEST(DirtyLog, a_range_marks_every_page_it_touches_and_no_other) {
    std::vector<uint8_t> bitmap(4);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    // From the last byte of page 5 to the first byte of page 7.
    log.mark(6 * kPage - 1, kPage + 2);
    EXPECT_EQ(marked(bitmap), (std::set<uint64_t>{5, 6, 7}));
}

TEST(DirtyLog, a_range_across_bitmap_bytes_sets_whole_bytes_at_once) {
    std::vector<uint8_t> bitmap(4);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    log.mark(6 * kPage, 12 * kPage);  // pages 6..17
    EXPECT_EQ(bitmap[0], 0xc0);
    EXPECT_EQ(bitmap[1], 0xff);
    EXPECT_EQ(bitmap[2], 0x03);
    EXPECT_EQ(bitmap[3], 0x00);
}

TEST(DirtyLog, marks_accumulate_and_keep_bits_set_by_others) {
    std::vector<uint8_t> bitmap(1, 0x80);  // page 7, marked by another queue
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    log.mark(0, 1);
    log.mark(2 * kPage, kPage);
    EXPECT_EQ(bitmap[0], 0x85);
}

TEST(DirtyLog, zero_length_marks_nothing) {
    std::vector<uint8_t> bitmap(1);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    log.mark(3 * kPage, 0);
    EXPECT_EQ(bitmap[0], 0u);
    EXPECT_EQ(log.pages_beyond(), 0u);
}

TEST(DirtyLog, pages_beyond_the_log_are_counted_not_written) {
    std::vector<uint8_t> bitmap(2, 0), guard(1, 0);
    const DirtyLog log(bitmap.data(), 1, nullptr);  // covers pages 0..7 only
    EXPECT_EQ(log.covered_bytes(), 8 * kPage);
    log.mark(6 * kPage, 4 * kPage);  // pages 6..9: 8 and 9 are beyond
    EXPECT_EQ(bitmap[0], 0xc0);
    EXPECT_EQ(bitmap[1], 0u) << "the byte after the log is never written";
    EXPECT_EQ(log.pages_beyond(), 2u);
    log.mark(100 * kPage, 1);
    EXPECT_EQ(log.pages_beyond(), 3u);
}

TEST(DirtyLog, a_range_that_wraps_past_2_64_is_counted_not_written) {
    std::vector<uint8_t> bitmap(1);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    log.mark(~uint64_t{0} - 10, 100);
    EXPECT_EQ(bitmap[0], 0u);
    EXPECT_EQ(log.pages_beyond(), 1u);
}

TEST(QueueLog, inactive_by_default) {
    EXPECT_FALSE(QueueLog().active());
}

TEST(QueueLog, buffers_are_marked_at_their_guest_addresses_across_regions) {
    test::TestGuestMemory memory;
    uint8_t* low = memory.add_region(0x10000, 2 * kPage);   // pages 16, 17
    uint8_t* high = memory.add_region(0x40000, 2 * kPage);  // pages 64, 65
    std::vector<uint8_t> bitmap(16);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    QueueLog q(&log, &memory.map(), {});
    ASSERT_TRUE(q.active());
    // A buffer made of the end of the low region and the start of the high one.
    const iovec pieces[] = {{low + kPage + 4000, 96}, {high, 5000}};
    q.mark_buffer(pieces, 96 + 4200);  // all of the first piece, 4200 of the second
    EXPECT_EQ(marked(bitmap), (std::set<uint64_t>{17, 64, 65}));
}

TEST(QueueLog, only_the_bytes_written_are_marked) {
    test::TestGuestMemory memory;
    uint8_t* host = memory.add_region(0, 4 * kPage);
    std::vector<uint8_t> bitmap(1);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    QueueLog q(&log, &memory.map(), {});
    const iovec pieces[] = {{host + kPage - 10, 10}, {host + 2 * kPage, kPage}};
    q.mark_buffer(pieces, 10);  // the packet ended in the first piece
    EXPECT_EQ(marked(bitmap), (std::set<uint64_t>{0}));
}

TEST(QueueLog, ring_areas_are_marked_whole) {
    test::TestGuestMemory memory;
    memory.add_region(0, 16 * kPage);
    std::vector<uint8_t> bitmap(2);
    const DirtyLog log(bitmap.data(), bitmap.size(), nullptr);
    RingLogAreas areas;
    areas.ranges[0] = {3 * kPage + 8, 6 + 8 * 1024};  // a 1024-entry used ring: pages 3..5
    areas.ranges[1] = {9 * kPage, 4};
    QueueLog q(&log, &memory.map(), areas);
    q.mark_ring();
    EXPECT_EQ(marked(bitmap), (std::set<uint64_t>{3, 4, 5, 9}));
}

}  // namespace
}  // namespace vnet::virtio
