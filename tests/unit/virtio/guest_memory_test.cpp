#include "virtio/guest_memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "unit/virtio/test_ring.hpp"

namespace vnet::virtio {
namespace {

using test::TestGuestMemory;

// A region over a caller-owned buffer (the map never dereferences it).
GuestRegion region_at(uint64_t gpa, uint64_t size, uint8_t* host, uint64_t uva) {
    return GuestRegion{gpa, size, uva, host, nullptr};
}

TEST(GuestMemory, add_rejects_a_zero_size_region) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    EXPECT_EQ(map.add(region_at(0x1000, 0, buf.data(), 0x1000)), MemoryError::zero_size);
    EXPECT_EQ(map.region_count(), 0u);
}

TEST(GuestMemory, add_rejects_a_guest_range_that_wraps_past_2_pow_64) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    EXPECT_EQ(map.add(region_at(UINT64_MAX - 15, 32, buf.data(), 0x1000)),
              MemoryError::address_overflow);
}

TEST(GuestMemory, add_rejects_a_user_range_that_wraps_past_2_pow_64) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    EXPECT_EQ(map.add(region_at(0x1000, 32, buf.data(), UINT64_MAX - 15)),
              MemoryError::address_overflow);
}

TEST(GuestMemory, add_rejects_a_region_without_host_address) {
    GuestMemoryMap map;
    EXPECT_EQ(map.add(region_at(0x1000, 64, nullptr, 0x1000)), MemoryError::null_host_address);
}

TEST(GuestMemory, add_rejects_a_region_overlapping_an_existing_guest_range) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x1000, buf.data(), 0x10000)), MemoryError::ok);
    EXPECT_EQ(map.add(region_at(0x1fff, 0x10, buf.data(), 0x20000)),
              MemoryError::overlaps_existing);
    EXPECT_EQ(map.add(region_at(0x0800, 0x1000, buf.data(), 0x30000)),
              MemoryError::overlaps_existing);
    EXPECT_EQ(map.region_count(), 1u);
}

TEST(GuestMemory, add_rejects_a_region_overlapping_an_existing_user_range) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x1000, buf.data(), 0x10000)), MemoryError::ok);
    EXPECT_EQ(map.add(region_at(0x8000, 0x1000, buf.data(), 0x10800)),
              MemoryError::overlaps_existing);
}

TEST(GuestMemory, add_accepts_regions_that_touch_end_to_start) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x1000, buf.data(), 0x1000)), MemoryError::ok);
    EXPECT_EQ(map.add(region_at(0x2000, 0x1000, buf.data(), 0x2000)), MemoryError::ok);
    EXPECT_EQ(map.region_count(), 2u);
}

TEST(GuestMemory, add_rejects_more_than_max_regions) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    for (uint64_t i = 0; i < GuestMemoryMap::kMaxRegions; ++i) {
        ASSERT_EQ(map.add(region_at(i * 0x1000, 0x1000, buf.data(), i * 0x1000)), MemoryError::ok);
    }
    const uint64_t next = GuestMemoryMap::kMaxRegions * 0x1000;
    EXPECT_EQ(map.add(region_at(next, 0x1000, buf.data(), next)), MemoryError::too_many_regions);
}

TEST(GuestMemory, keeps_regions_sorted_by_guest_address_whatever_the_add_order) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    for (uint64_t gpa : {0x5000u, 0x1000u, 0x3000u}) {
        ASSERT_EQ(map.add(region_at(gpa, 0x1000, buf.data(), gpa)), MemoryError::ok);
    }
    ASSERT_EQ(map.region_count(), 3u);
    EXPECT_EQ(map.regions()[0].guest_phys_addr, 0x1000u);
    EXPECT_EQ(map.regions()[1].guest_phys_addr, 0x3000u);
    EXPECT_EQ(map.regions()[2].guest_phys_addr, 0x5000u);
}

TEST(GuestMemory, finds_every_one_of_509_regions_with_and_without_a_hint) {
    constexpr uint64_t kRegions = 509;  // what QEMU front ends are offered by libvhost-user
    std::vector<uint8_t> buf(kRegions);
    std::vector<uint64_t> order(kRegions);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(509));
    GuestMemoryMap map;
    // Regions of 0x1000 bytes with 0x1000-byte holes between them.
    for (uint64_t i : order) {
        ASSERT_EQ(map.add(region_at(i * 0x2000, 0x1000, &buf[i], i * 0x2000)), MemoryError::ok);
    }
    size_t hint = 0;
    for (uint64_t i = 0; i < kRegions; ++i) {
        const GuestRegion* first = map.find_gpa(i * 0x2000, &hint);
        ASSERT_NE(first, nullptr);
        EXPECT_EQ(first->host_addr, &buf[i]);
        EXPECT_EQ(hint, i);  // the hint now names the region just found
        EXPECT_EQ(map.find_gpa(i * 0x2000 + 0xfff, &hint), first);
        EXPECT_EQ(map.find_gpa(i * 0x2000 + 0x1000, &hint), nullptr);  // the hole after it
        EXPECT_EQ(map.find_gpa(i * 0x2000 + 0x800), first);
    }
    EXPECT_EQ(map.find_gpa(kRegions * 0x2000, &hint), nullptr);
}

TEST(GuestMemory, find_ignores_a_stale_hint) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x1000, buf.data(), 0x1000)), MemoryError::ok);
    ASSERT_EQ(map.add(region_at(0x3000, 0x1000, buf.data() + 1, 0x3000)), MemoryError::ok);
    size_t hint = 1;  // names the other region
    const GuestRegion* r = map.find_gpa(0x1800, &hint);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->guest_phys_addr, 0x1000u);
    EXPECT_EQ(hint, 0u);
    hint = 12345;  // out of range, e.g. after a region was removed
    EXPECT_EQ(map.find_gpa(0x3800, &hint), &map.regions()[1]);
    EXPECT_EQ(hint, 1u);
}

TEST(GuestMemory, gpa_to_host_translates_a_range_inside_one_region) {
    TestGuestMemory mem;
    uint8_t* host = mem.add_region(0x10000, 0x1000);
    EXPECT_EQ(mem.map().gpa_to_host(0x10010, 16), host + 0x10);
    EXPECT_EQ(mem.map().gpa_to_host(0x10000, 0x1000), host);  // ends exactly at region end
}

TEST(GuestMemory, gpa_to_host_rejects_a_range_crossing_the_region_end) {
    TestGuestMemory mem;
    mem.add_region(0x10000, 0x1000);
    mem.add_region(0x11000, 0x1000);  // adjacent: still two regions, so no single pointer
    EXPECT_EQ(mem.map().gpa_to_host(0x10ff0, 0x20), nullptr);
    EXPECT_EQ(mem.map().gpa_to_host(0x10000, 0x1001), nullptr);
}

TEST(GuestMemory, gpa_to_host_rejects_unmapped_addresses_and_huge_lengths) {
    TestGuestMemory mem;
    mem.add_region(0x10000, 0x1000);
    EXPECT_EQ(mem.map().gpa_to_host(0xfff0, 4), nullptr);
    EXPECT_EQ(mem.map().gpa_to_host(0x11000, 0), nullptr);  // zero length past the end
    EXPECT_EQ(mem.map().gpa_to_host(0x10008, UINT64_MAX), nullptr);
}

TEST(GuestMemory, gpa_to_iovecs_splits_a_range_across_a_region_boundary) {
    TestGuestMemory mem;
    uint8_t* a = mem.add_region(0x10000, 0x1000);
    uint8_t* b = mem.add_region(0x11000, 0x1000);
    std::array<iovec, 4> iov{};
    size_t count = 0;
    ASSERT_TRUE(mem.map().gpa_to_iovecs(0x10f00, 0x200, iov, &count));
    ASSERT_EQ(count, 2u);
    EXPECT_EQ(iov[0].iov_base, a + 0xf00);
    EXPECT_EQ(iov[0].iov_len, 0x100u);
    EXPECT_EQ(iov[1].iov_base, b);
    EXPECT_EQ(iov[1].iov_len, 0x100u);
}

TEST(GuestMemory, gpa_to_iovecs_fails_when_a_byte_is_unmapped) {
    TestGuestMemory mem;
    mem.add_region(0x10000, 0x1000);
    mem.add_region(0x12000, 0x1000);  // hole at 0x11000
    std::array<iovec, 4> iov{};
    size_t count = 0;
    EXPECT_FALSE(mem.map().gpa_to_iovecs(0x10f00, 0x1200, iov, &count));
}

TEST(GuestMemory, gpa_to_iovecs_fails_when_out_of_iovecs) {
    TestGuestMemory mem;
    mem.add_region(0x10000, 0x1000);
    mem.add_region(0x11000, 0x1000);
    std::array<iovec, 1> iov{};
    size_t count = 0;
    EXPECT_FALSE(mem.map().gpa_to_iovecs(0x10f00, 0x200, iov, &count));
}

TEST(GuestMemory, gpa_to_iovecs_appends_after_existing_iovecs) {
    TestGuestMemory mem;
    uint8_t* a = mem.add_region(0x10000, 0x1000);
    std::array<iovec, 4> iov{};
    size_t count = 2;
    ASSERT_TRUE(mem.map().gpa_to_iovecs(0x10000, 8, iov, &count));
    EXPECT_EQ(count, 3u);
    EXPECT_EQ(iov[2].iov_base, a);
}

TEST(GuestMemory, remove_needs_guest_user_and_size_to_match) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x1000, buf.data(), 0x9000)), MemoryError::ok);
    EXPECT_EQ(map.remove(0x1000, 0x9000, 0x800), MemoryError::no_such_region);
    EXPECT_EQ(map.remove(0x1000, 0x1000, 0x1000), MemoryError::no_such_region);
    EXPECT_EQ(map.remove(0x1000, 0x9000, 0x1000), MemoryError::ok);
    EXPECT_EQ(map.region_count(), 0u);
    EXPECT_EQ(map.find_gpa(0x1000), nullptr);
    EXPECT_EQ(map.remove(0x1000, 0x9000, 0x1000), MemoryError::no_such_region);
}

TEST(GuestMemory, translates_user_addresses_for_ring_setup) {
    std::array<uint8_t, 64> buf{};
    GuestMemoryMap map;
    ASSERT_EQ(map.add(region_at(0x1000, 0x40, buf.data(), 0x7f0000)), MemoryError::ok);
    EXPECT_EQ(map.uva_to_host(0x7f0010, 0x30), buf.data() + 0x10);
    EXPECT_EQ(map.uva_to_host(0x7f0010, 0x31), nullptr);
    EXPECT_EQ(map.find_uva(0x1000), nullptr);
}

}  // namespace
}  // namespace vnet::virtio
