#include "virtio/ring/descriptor_chain.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "unit/virtio/chain_test_layout.hpp"
#include "unit/virtio/test_ring.hpp"

namespace vnet::virtio {
namespace {

using test::GuestSplitRing;
using test::TestGuestMemory;
using namespace test::chain_layout;

struct Guest {
    explicit Guest(uint16_t queue_size = 8) : ring(mem, kRing, queue_size) {}

    PopStatus walk(uint16_t head, bool indirect_allowed = true) {
        return walk_into(head, iov, indirect_allowed);
    }
    PopStatus walk_into(uint16_t head, std::span<iovec> out, bool indirect_allowed = true) {
        return walk_descriptor_chain(ring.walk_context(indirect_allowed, &hint), head, out, chain);
    }
    uint8_t* host(uint64_t gpa) { return mem.host(gpa); }

    TestGuestMemory mem;
    uint8_t* low = mem.add_region(kRing, kLowEnd - kRing);
    uint8_t* high = mem.add_region(kHigh, 0x1000);
    GuestSplitRing ring;
    size_t hint = 0;
    std::array<iovec, 16> iov{};
    DescriptorChain chain;
};

// ---- happy paths -----------------------------------------------------------

TEST(DescriptorChain, walks_a_single_readable_descriptor) {
    Guest g;
    g.ring.set_desc(3, kBuf, 64);
    ASSERT_EQ(g.walk(3), PopStatus::ok);
    EXPECT_EQ(g.chain.head, 3);
    EXPECT_EQ(g.chain.readable_segments, 1);
    EXPECT_EQ(g.chain.writable_segments, 0);
    EXPECT_EQ(g.chain.readable_bytes, 64u);
    EXPECT_EQ(g.chain.writable_bytes, 0u);
    EXPECT_EQ(g.iov[0].iov_base, g.host(kBuf));
    EXPECT_EQ(g.iov[0].iov_len, 64u);
}

TEST(DescriptorChain, walks_a_direct_chain_of_readable_then_writable_descriptors) {
    Guest g;
    g.ring.set_desc(0, kBuf, 12, N, 5);
    g.ring.set_desc(5, kBuf + 0x100, 100, N, 2);
    g.ring.set_desc(2, kBuf + 0x200, 1500, W | N, 7);
    g.ring.set_desc(7, kBuf + 0x1000, 10, W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.segment_count(), 4u);
    EXPECT_EQ(g.chain.readable_segments, 2);
    EXPECT_EQ(g.chain.writable_segments, 2);
    EXPECT_EQ(g.chain.readable_bytes, 112u);
    EXPECT_EQ(g.chain.writable_bytes, 1510u);
    EXPECT_EQ(g.iov[1].iov_base, g.host(kBuf + 0x100));
    EXPECT_EQ(g.iov[2].iov_base, g.host(kBuf + 0x200));
    EXPECT_EQ(g.iov[3].iov_len, 10u);
}

TEST(DescriptorChain, walks_an_indirect_table_of_readable_and_writable_descriptors) {
    Guest g;
    g.mem.write_descs(kTable,
                      {{kBuf, 12, N, 1}, {kBuf + 0x100, 200, W | N, 2}, {kBuf + 0x400, 300, W, 0}});
    g.ring.set_desc(4, kTable, 3 * 16, I);
    ASSERT_EQ(g.walk(4), PopStatus::ok);
    EXPECT_EQ(g.chain.head, 4);
    EXPECT_EQ(g.chain.readable_segments, 1);
    EXPECT_EQ(g.chain.writable_segments, 2);
    EXPECT_EQ(g.chain.readable_bytes, 12u);
    EXPECT_EQ(g.chain.writable_bytes, 500u);
    EXPECT_EQ(g.iov[2].iov_base, g.host(kBuf + 0x400));
}

TEST(DescriptorChain, follows_next_inside_an_indirect_table) {
    Guest g;
    // virtio 1.2 §2.7.5.3: entries are chained by next, not necessarily in table order.
    g.mem.write_descs(kTable,
                      {{kBuf, 10, N, 2}, {kBuf + 0x200, 30, W, 0}, {kBuf + 0x100, 20, N, 1}});
    g.ring.set_desc(0, kTable, 48, I);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_bytes, 30u);
    EXPECT_EQ(g.chain.writable_bytes, 30u);
    EXPECT_EQ(g.iov[1].iov_base, g.host(kBuf + 0x100));
}

TEST(DescriptorChain, walks_direct_descriptors_followed_by_an_indirect_table) {
    Guest g;
    // virtio 1.2 §2.7.5.3.2: zero or more chained descriptors, then one INDIRECT.
    g.mem.write_descs(kTable, {{kBuf + 0x100, 20, W, 0}});
    g.ring.set_desc(1, kBuf, 10, N, 2);
    g.ring.set_desc(2, kTable, 16, I);
    ASSERT_EQ(g.walk(1), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 1);
    EXPECT_EQ(g.chain.writable_segments, 1);
    EXPECT_EQ(g.chain.readable_bytes, 10u);
    EXPECT_EQ(g.chain.writable_bytes, 20u);
}

TEST(DescriptorChain, ignores_the_write_flag_on_a_descriptor_that_refers_to_a_table) {
    Guest g;
    // virtio 1.2 §2.7.5.3.2: the device MUST ignore WRITE on the indirect descriptor.
    g.mem.write_descs(kTable, {{kBuf, 10, 0, 0}});
    g.ring.set_desc(0, kTable, 16, I | W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_bytes, 10u);
    EXPECT_EQ(g.chain.writable_segments, 0);
}

TEST(DescriptorChain, splits_a_buffer_spanning_two_regions_into_two_iovecs) {
    Guest g;
    g.ring.set_desc(0, kLowEnd - 0x10, 0x30, W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.writable_segments, 2);
    EXPECT_EQ(g.chain.writable_bytes, 0x30u);
    EXPECT_EQ(g.iov[0].iov_base, g.low + (kLowEnd - 0x10 - kRing));
    EXPECT_EQ(g.iov[0].iov_len, 0x10u);
    EXPECT_EQ(g.iov[1].iov_base, g.high);
    EXPECT_EQ(g.iov[1].iov_len, 0x20u);
}

TEST(DescriptorChain, skips_zero_length_descriptors) {
    Guest g;
    g.ring.set_desc(0, kUnmapped, 0, N, 1);  // address of an empty buffer is never used
    g.ring.set_desc(1, kBuf, 8, N, 2);
    g.ring.set_desc(2, kBuf + 8, 0, W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.segment_count(), 1u);
    EXPECT_EQ(g.chain.readable_bytes, 8u);
    EXPECT_EQ(g.chain.writable_bytes, 0u);
    EXPECT_EQ(g.iov[0].iov_base, g.host(kBuf));
}

TEST(DescriptorChain, accepts_a_chain_as_long_as_the_ring) {
    Guest g(8);
    for (uint16_t i = 0; i < 8; ++i) {
        g.ring.set_desc(i, kBuf + 16ull * i, 16, i < 7 ? N : 0, static_cast<uint16_t>(i + 1));
    }
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 8);
    EXPECT_EQ(g.chain.readable_bytes, 128u);
}

TEST(DescriptorChain, accepts_an_indirect_table_with_as_many_entries_as_the_queue) {
    Guest g(8);
    for (uint16_t i = 0; i < 8; ++i) {
        g.mem.write_desc(kTable + 16ull * i, kBuf, 1, i < 7 ? N : 0, static_cast<uint16_t>(i + 1));
    }
    g.ring.set_desc(0, kTable, 8 * 16, I);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_segments, 8);
}

TEST(DescriptorChain, reads_an_indirect_table_that_is_not_8_byte_aligned) {
    Guest g;
    g.mem.write_descs(kTable + 3, {{kBuf, 10, N, 1}, {kBuf + 0x100, 20, W, 0}});
    g.ring.set_desc(0, kTable + 3, 32, I);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_bytes, 10u);
    EXPECT_EQ(g.chain.writable_bytes, 20u);
    EXPECT_EQ(g.iov[1].iov_base, g.host(kBuf + 0x100));
}

TEST(DescriptorChain, caches_the_last_region_in_the_hint) {
    Guest g;
    g.ring.set_desc(0, kHigh + 0x10, 8);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.hint, 1u);
}

TEST(DescriptorChain, writes_nothing_to_the_chain_on_error) {
    Guest g;
    g.chain.head = 77;
    g.ring.set_desc(0, kUnmapped, 8);
    ASSERT_EQ(g.walk(0), PopStatus::buffer_unmapped);
    EXPECT_EQ(g.chain.head, 77);
}

TEST(DescriptorChain, accepts_a_chain_of_2_pow_32_minus_1_bytes) {
    Guest g;
    HugeRegion huge(g.mem.map());
    if (!huge.ok()) {
        GTEST_SKIP() << "cannot reserve 4 GiB of address space";
    }
    g.ring.set_desc(0, kBuf, 1, N, 1);
    g.ring.set_desc(1, HugeRegion::kGpa, 0xffff'fffe, W);
    ASSERT_EQ(g.walk(0), PopStatus::ok);
    EXPECT_EQ(g.chain.readable_bytes, 1u);
    EXPECT_EQ(g.chain.writable_bytes, 0xffff'fffeu);
}

// ---- one test per malformed-input class -------------------------------------

TEST(DescriptorChain, rejects_a_head_out_of_range) {
    Guest g(8);
    EXPECT_EQ(g.walk(8), PopStatus::head_out_of_range);
    EXPECT_EQ(g.walk(0xffff), PopStatus::head_out_of_range);
}

TEST(DescriptorChain, rejects_a_next_index_out_of_range) {
    Guest g(8);
    g.ring.set_desc(0, kBuf, 8, N, 8);
    EXPECT_EQ(g.walk(0), PopStatus::next_out_of_range);
}

TEST(DescriptorChain, rejects_a_loop_in_the_ring) {
    Guest g(8);
    g.ring.set_desc(0, kBuf, 8, N, 1);
    g.ring.set_desc(1, kBuf, 8, N, 2);
    g.ring.set_desc(2, kBuf, 8, N, 1);
    EXPECT_EQ(g.walk(0), PopStatus::chain_loop);
}

TEST(DescriptorChain, rejects_a_descriptor_that_chains_to_itself) {
    Guest g(8);
    g.ring.set_desc(5, kBuf, 0, N, 5);
    EXPECT_EQ(g.walk(5), PopStatus::chain_loop);
}

TEST(DescriptorChain, rejects_a_loop_inside_an_indirect_table) {
    Guest g(8);
    g.mem.write_descs(kTable, {{kBuf, 8, N, 1}, {kBuf, 8, N, 0}});
    g.ring.set_desc(0, kTable, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::chain_loop);
}

TEST(DescriptorChain, rejects_a_next_index_beyond_the_indirect_table) {
    Guest g(8);
    // Index 2 is inside the ring but outside this 2-entry table.
    g.mem.write_descs(kTable, {{kBuf, 8, N, 2}, {kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::next_out_of_range);
}

TEST(DescriptorChain, rejects_indirect_when_the_feature_was_not_negotiated) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 16, I);
    EXPECT_EQ(g.walk(0, /*indirect_allowed=*/false), PopStatus::indirect_not_negotiated);
}

TEST(DescriptorChain, rejects_a_nested_indirect_table) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf, 8, N, 1}, {kTable + 0x100, 16, I, 0}});
    g.mem.write_descs(kTable + 0x100, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_nested);
}

TEST(DescriptorChain, rejects_indirect_together_with_next) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 16, I | N, 1);
    g.ring.set_desc(1, kBuf, 8);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_with_next);
}

TEST(DescriptorChain, rejects_an_indirect_table_of_length_zero) {
    Guest g;
    g.ring.set_desc(0, kTable, 0, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_bad_length);
}

TEST(DescriptorChain, rejects_indirect_table_not_multiple_of_16) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}, {kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 24, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_bad_length);
}

TEST(DescriptorChain, rejects_an_indirect_table_with_more_entries_than_the_queue) {
    Guest g(8);
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kTable, 9 * 16, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_too_large);
    g.ring.set_desc(0, kTable, 0xffff'fff0, I);  // far beyond vhost's 65536-entry cap too
    EXPECT_EQ(g.walk(0), PopStatus::indirect_too_large);
}

TEST(DescriptorChain, rejects_an_indirect_table_spanning_two_regions) {
    Guest g;
    // The table is read in place, so it must lie in one region even if the next is adjacent.
    g.ring.set_desc(0, kLowEnd - 16, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_table_unmapped);
}

TEST(DescriptorChain, rejects_an_unmapped_indirect_table) {
    Guest g;
    g.ring.set_desc(0, kUnmapped, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::indirect_table_unmapped);
}

TEST(DescriptorChain, rejects_a_readable_descriptor_after_a_writable_one) {
    Guest g;
    g.ring.set_desc(0, kBuf, 8, W | N, 1);
    g.ring.set_desc(1, kBuf, 8);
    EXPECT_EQ(g.walk(0), PopStatus::readable_after_writable);
}

TEST(DescriptorChain, rejects_a_readable_descriptor_in_the_table_after_a_writable_direct_one) {
    Guest g;
    g.mem.write_descs(kTable, {{kBuf, 8, 0, 0}});
    g.ring.set_desc(0, kBuf, 8, W | N, 1);
    g.ring.set_desc(1, kTable, 16, I);
    EXPECT_EQ(g.walk(0), PopStatus::readable_after_writable);
}

TEST(DescriptorChain, rejects_a_readable_zero_length_descriptor_after_a_writable_one) {
    Guest g;
    // virtio 1.2 §2.7.5.2 orders descriptors, not bytes: an empty one counts too.
    g.ring.set_desc(0, kBuf, 0, W | N, 1);
    g.ring.set_desc(1, kBuf, 8);
    EXPECT_EQ(g.walk(0), PopStatus::readable_after_writable);
}

TEST(DescriptorChain, rejects_a_chain_of_2_pow_32_bytes) {
    Guest g;
    // Checked before translation: the second buffer need not even be mapped.
    g.ring.set_desc(0, kBuf, 1, N, 1);
    g.ring.set_desc(1, kUnmapped, 0xffff'ffff, W);
    EXPECT_EQ(g.walk(0), PopStatus::total_length_overflow);
}

TEST(DescriptorChain, rejects_a_chain_of_2_pow_32_bytes_across_an_indirect_table) {
    Guest g;
    HugeRegion huge(g.mem.map());
    if (!huge.ok()) {
        GTEST_SKIP() << "cannot reserve 4 GiB of address space";
    }
    g.mem.write_descs(
        kTable, {{HugeRegion::kGpa, 0x8000'0000, N, 1}, {HugeRegion::kGpa, 0x8000'0000, W, 0}});
    g.ring.set_desc(0, kTable, 32, I);
    EXPECT_EQ(g.walk(0), PopStatus::total_length_overflow);
}

TEST(DescriptorChain, rejects_more_segments_than_the_caller_allows) {
    Guest g;
    g.ring.set_desc(0, kBuf, 8, N, 1);
    g.ring.set_desc(1, kBuf, 8, N, 2);
    g.ring.set_desc(2, kBuf, 8);
    std::array<iovec, 2> out{};
    EXPECT_EQ(g.walk_into(0, out), PopStatus::too_many_segments);
}

TEST(DescriptorChain, rejects_a_buffer_spanning_two_regions_when_one_iovec_is_left) {
    Guest g;
    g.ring.set_desc(0, kLowEnd - 0x10, 0x30);
    std::array<iovec, 1> out{};
    EXPECT_EQ(g.walk_into(0, out), PopStatus::too_many_segments);
}

TEST(DescriptorChain, rejects_an_unmapped_buffer) {
    Guest g;
    g.ring.set_desc(0, kBuf, 8, N, 1);
    g.ring.set_desc(1, kUnmapped, 8, W);
    EXPECT_EQ(g.walk(0), PopStatus::buffer_unmapped);
}

TEST(DescriptorChain, rejects_a_buffer_running_past_the_end_of_guest_memory) {
    Guest g;
    g.ring.set_desc(0, kHigh + 0xff0, 0x20);
    EXPECT_EQ(g.walk(0), PopStatus::buffer_unmapped);
}

TEST(DescriptorChain, rejects_a_buffer_whose_end_wraps_past_2_pow_64) {
    Guest g;
    g.ring.set_desc(0, UINT64_MAX - 4, 0x10);
    EXPECT_EQ(g.walk(0), PopStatus::buffer_unmapped);
}

TEST(DescriptorChain, names_every_error) {
    std::set<std::string> names;
    for (int e = 0; e <= static_cast<int>(PopStatus::buffer_unmapped); ++e) {
        names.insert(to_string(static_cast<PopStatus>(e)));
    }
    EXPECT_EQ(names.size(), static_cast<size_t>(PopStatus::buffer_unmapped) + 1);
}

}  // namespace
}  // namespace vnet::virtio
