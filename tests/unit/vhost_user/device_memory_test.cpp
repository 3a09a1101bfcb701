// Memory table: SET_MEM_TABLE, ADD/REM_MEM_REG, mapping rules, fd hygiene.
#include <gtest/gtest.h>

#include "unit/vhost_user/device_harness.hpp"
#include "vhost_user/memory_region.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::GuestMemory;
using test::kNeedReply;
using test::ObserverEvent;
using test::RequestBuilder;
using test::split_ring_of;

class VhostUserMemory : public ::testing::Test {
protected:
    void SetUp() override { h.negotiate(); }

    // A one-region table with `desc` and `fd`, sent with NEED_REPLY.
    test::Reply send_table(const MemoryRegionDesc& desc, int fd, uint32_t size = 0) {
        MemoryTable t{};
        t.nregions = 1;
        t.regions[0] = desc;
        return h.send(RequestBuilder(Request::set_mem_table, kNeedReply)
                          .payload(t)
                          .size(size != 0 ? size : memory_table_payload_size(1))
                          .fd(fd));
    }

    DeviceHarness h;
};

TEST_F(VhostUserMemory, accepts_mem_table_with_the_exact_computed_size_qemu_sends) {
    GuestMemory mem;
    auto r = send_table(mem.region(), mem.fd.get(), 8 + 32);
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_EQ(r.u64(), 0u);
    ASSERT_EQ(h.device->memory()->region_count(), 1u);
    const virtio::GuestRegion& region = h.device->memory()->regions()[0];
    EXPECT_EQ(region.size, GuestMemory::kSize);
    // The device's mapping sees what the guest wrote.
    mem.host[123] = 0x5a;
    EXPECT_EQ(region.host_addr[123], 0x5a);
}

TEST_F(VhostUserMemory, accepts_mem_table_with_the_full_struct_size) {
    GuestMemory mem;
    auto r = send_table(mem.region(), mem.fd.get(), sizeof(MemoryTable));
    EXPECT_EQ(r.result.error, MessageError::ok);
}

TEST_F(VhostUserMemory, rejects_mem_table_with_any_other_size) {
    GuestMemory mem;
    for (uint32_t size : {8u + 32u + 8u, 8u + 64u, 8u + 31u, 4u}) {
        auto r = send_table(mem.region(), mem.fd.get(), size);
        EXPECT_EQ(r.result.error, MessageError::payload_size_mismatch) << size;
    }
    EXPECT_EQ(h.device->memory()->region_count(), 0u);
}

TEST_F(VhostUserMemory, rejects_mem_table_with_zero_or_more_than_8_regions) {
    for (uint32_t n : {0u, 9u, 0xffffffffu}) {
        MemoryTable t{};
        t.nregions = n;
        auto r = h.send(RequestBuilder(Request::set_mem_table, kNeedReply).payload(t));
        EXPECT_EQ(r.result.error, MessageError::mem_region_count_invalid) << n;
    }
}

TEST_F(VhostUserMemory, rejects_mem_table_whose_fd_count_differs_from_nregions) {
    GuestMemory mem;
    MemoryTable t{};
    t.nregions = 2;
    t.regions[0] = mem.region();
    auto r = h.send(RequestBuilder(Request::set_mem_table, kNeedReply)
                        .payload(t)
                        .size(memory_table_payload_size(2))
                        .fd(mem.fd.get()));
    EXPECT_EQ(r.result.error, MessageError::wrong_fd_count);
}

TEST_F(VhostUserMemory, rejects_mem_region_beyond_file_size) {
    UniqueFd fd = test::make_memfd(64 * 1024);
    auto r = send_table({0, 64 * 1024, 0x10000, 4096}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_beyond_file);
    EXPECT_EQ(h.device->memory()->region_count(), 0u);
}

TEST_F(VhostUserMemory, rejects_mem_region_whose_offset_plus_size_overflows) {
    UniqueFd fd = test::make_memfd(64 * 1024);
    auto r = send_table({0, 0x1000, 0x10000, ~uint64_t{0} - 0x10}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_offset_overflow);
}

TEST_F(VhostUserMemory, rejects_mem_region_whose_guest_address_range_wraps) {
    UniqueFd fd = test::make_memfd(64 * 1024);
    auto r = send_table({~uint64_t{0} - 0xfff, 0x2000, 0x10000, 0}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_address_overflow);
}

TEST_F(VhostUserMemory, rejects_mem_region_of_size_zero) {
    UniqueFd fd = test::make_memfd(64 * 1024);
    auto r = send_table({0, 0, 0x10000, 0}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_zero_size);
}

TEST_F(VhostUserMemory, rejects_mem_region_fd_that_is_not_a_regular_file) {
    UniqueFd e = test::make_eventfd();
    auto r = send_table({0, 4096, 0x10000, 0}, e.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_not_a_file);
}

TEST_F(VhostUserMemory, rejects_sealed_memfd_without_seal_shrink) {
    UniqueFd fd = test::make_memfd(64 * 1024, MFD_ALLOW_SEALING);
    ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW), 0);
    auto r = send_table({0, 4096, 0x10000, 0}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_not_sealed_against_shrink);
}

TEST_F(VhostUserMemory, accepts_memfd_sealed_against_shrink_like_qemu_memfd_backend) {
    UniqueFd fd = test::make_memfd(64 * 1024, MFD_ALLOW_SEALING);
    ASSERT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), 0);
    auto r = send_table({0, 4096, 0x10000, 0}, fd.get());
    EXPECT_EQ(r.result.error, MessageError::ok);
}

TEST_F(VhostUserMemory, maps_a_region_at_an_unaligned_offset_exactly_once) {
    GuestMemory mem;
    mem.host[4096 + 100] = 0x77;
    auto r = send_table({0x1000, 8192, 0x20000, 4096 + 100}, mem.fd.get());
    ASSERT_EQ(r.result.error, MessageError::ok);
    EXPECT_EQ(h.device->memory()->gpa_to_host(0x1000, 1)[0], 0x77);
}

TEST_F(VhostUserMemory, rejects_overlapping_regions) {
    GuestMemory mem;
    MemoryTable t{};
    t.nregions = 2;
    t.regions[0] = {0, 0x10000, 0x100000, 0};
    t.regions[1] = {0x8000, 0x10000, 0x200000, 0};
    auto r = h.send(RequestBuilder(Request::set_mem_table, kNeedReply)
                        .payload(t)
                        .size(memory_table_payload_size(2))
                        .fd(mem.fd.get())
                        .fd(mem.fd.get()));
    EXPECT_EQ(r.result.error, MessageError::mem_regions_overlap);
}

TEST_F(VhostUserMemory, refused_table_leaves_the_previous_map_in_place) {
    GuestMemory mem;
    ASSERT_EQ(send_table(mem.region(), mem.fd.get()).result.error, MessageError::ok);
    auto before = h.device->memory();
    UniqueFd small = test::make_memfd(4096);
    EXPECT_EQ(send_table({0, 8192, 0, 0}, small.get()).result.error,
              MessageError::mem_region_beyond_file);
    EXPECT_EQ(h.device->memory(), before);
}

TEST_F(VhostUserMemory, new_table_restarts_ready_rings_and_old_snapshot_stays_mapped) {
    GuestMemory mem;
    h.set_mem_table(mem);
    h.start_ring(mem, 0);
    auto old_snapshot = h.device->queue_snapshot(0);
    const virtio::VirtqDesc* old_desc = split_ring_of(old_snapshot).split().layout().desc;
    ASSERT_TRUE(old_desc != nullptr);
    h.set_mem_table(mem);
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 1u);
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 2u);
    auto fresh = h.device->queue_snapshot(0);
    EXPECT_NE(fresh.memory, old_snapshot.memory);
    EXPECT_NE(split_ring_of(fresh).split().layout().desc, old_desc) << "a new mapping";
    // The worker's old snapshot keeps its mapping alive.
    mem.host[0x10000] = 0x42;
    EXPECT_EQ(reinterpret_cast<const uint8_t*>(old_desc)[0], 0x42);
}

TEST_F(VhostUserMemory, new_table_without_the_rings_memory_breaks_the_device) {
    GuestMemory mem;
    h.set_mem_table(mem);
    h.start_ring(mem, 0);
    auto r = send_table({0, GuestMemory::kSize, 0x100000000, 0}, mem.fd.get());
    EXPECT_EQ(r.result.error, MessageError::ring_not_in_guest_memory);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(VhostUserMemory, add_and_remove_regions_with_configure_mem_slots) {
    GuestMemory mem;
    SingleMemoryRegion reg{0, {0, 0x10000, 0x100000, 0}};
    auto r = h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg).fd(mem.fd.get()));
    EXPECT_EQ(r.u64(), 0u);
    SingleMemoryRegion reg2{0, {0x10000, 0x10000, 0x110000, 0x10000}};
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg2).fd(mem.fd.get()));
    EXPECT_EQ(h.device->memory()->region_count(), 2u);
    r = h.send(RequestBuilder(Request::rem_mem_reg, kNeedReply).payload(reg));
    EXPECT_EQ(r.u64(), 0u);
    EXPECT_EQ(h.device->memory()->region_count(), 1u);
}

// Memory hotplug (QEMU pc-dimm device_del): the region a ring lies in goes
// away. The ring cannot be served from memory the guest no longer has, and
// the front end must hear that the device is broken, with the reason.
TEST_F(VhostUserMemory, rem_mem_reg_of_the_region_a_ring_lies_in_breaks_the_device) {
    GuestMemory mem;
    UniqueFd dimm = test::make_memfd(0x10000);
    SingleMemoryRegion ring_region{0, mem.region()};
    SingleMemoryRegion other{0, {0x100000, 0x10000, 0x100000000, 0}};
    SingleMemoryRegion stays{0, {0x200000, 0x10000, 0x200000000, 0}};
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(ring_region).fd(mem.fd.get()));
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(other).fd(dimm.get()));
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(stays).fd(dimm.get()));
    ASSERT_EQ(h.device->memory()->region_count(), 3u);
    h.start_ring(mem, 0);
    ASSERT_EQ(h.observer.count(ObserverEvent::ready), 1u);

    // The other region goes: the ring is restarted on the new map and runs.
    auto r = h.send(RequestBuilder(Request::rem_mem_reg, kNeedReply).payload(other));
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_FALSE(h.device->is_broken());
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 1u);
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 2u);

    // The ring's own region goes: stopped, not restarted, the device broken.
    r = h.send(RequestBuilder(Request::rem_mem_reg, kNeedReply).payload(ring_region));
    EXPECT_EQ(r.result.error, MessageError::ring_not_in_guest_memory);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_EQ(h.device->broken_reason(),
              "vring 0: ring area not wholly inside one guest memory region");
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 2u);
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 2u);
    EXPECT_EQ(h.device->memory()->region_count(), 1u);
}

TEST_F(VhostUserMemory, rem_mem_reg_of_an_unknown_region_is_refused_and_its_fd_closed) {
    GuestMemory mem;
    SingleMemoryRegion reg{0, {0, 0x10000, 0x100000, 0}};
    RequestBuilder req(Request::rem_mem_reg, kNeedReply);
    req.payload(reg).fd(mem.fd.get());
    const int received = req.msg->fds[0].get();
    auto r = h.send(req);
    EXPECT_EQ(r.result.error, MessageError::mem_region_not_found);
    EXPECT_FALSE(test::fd_is_open(received));
}

TEST_F(VhostUserMemory, the_same_region_added_again_is_acknowledged_and_not_mapped_twice) {
    // QEMU 7.2 with queues=N: one vhost device per queue pair, each adds
    // every region over the one connection.
    GuestMemory mem;
    SingleMemoryRegion reg{0, {0, 0x10000, 0x100000, 0}};
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg).fd(mem.fd.get()));
    const uint8_t* mapped = h.device->memory()->regions()[0].host_addr;
    RequestBuilder again(Request::add_mem_reg, kNeedReply);
    again.payload(reg).fd(mem.fd.get());
    const int received = again.msg->fds[0].get();
    auto r = h.send(again);
    EXPECT_EQ(r.result.error, MessageError::ok);
    EXPECT_EQ(r.u64(), 0u);
    EXPECT_FALSE(h.device->is_broken());
    ASSERT_EQ(h.device->memory()->region_count(), 1u);
    EXPECT_EQ(h.device->memory()->regions()[0].host_addr, mapped);
    EXPECT_FALSE(test::fd_is_open(received));
}

TEST_F(VhostUserMemory, add_mem_reg_overlapping_an_existing_region_is_refused) {
    GuestMemory mem;
    SingleMemoryRegion reg{0, {0, 0x10000, 0x100000, 0}};
    h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg).fd(mem.fd.get()));
    SingleMemoryRegion overlapping{0, {0x8000, 0x10000, 0x500000, 0}};
    auto r = h.send(
        RequestBuilder(Request::add_mem_reg, kNeedReply).payload(overlapping).fd(mem.fd.get()));
    EXPECT_EQ(r.result.error, MessageError::mem_regions_overlap);
    EXPECT_EQ(h.device->memory()->region_count(), 1u);
}

TEST_F(VhostUserMemory, add_mem_reg_beyond_the_advertised_509_slots_is_refused) {
    UniqueFd fd = test::make_memfd(4096);
    for (uint64_t i = 0; i < kAdvertisedMemSlots; ++i) {
        SingleMemoryRegion reg{0, {i * 4096, 4096, 0x100000 + i * 4096, 0}};
        auto r = h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(reg).fd(fd.get()));
        ASSERT_EQ(r.result.error, MessageError::ok) << i;
    }
    SingleMemoryRegion one_more{0, {509 * 4096, 4096, 0x100000 + 509 * 4096, 0}};
    auto r =
        h.send(RequestBuilder(Request::add_mem_reg, kNeedReply).payload(one_more).fd(fd.get()));
    EXPECT_EQ(r.result.error, MessageError::mem_too_many_regions);
}

TEST_F(VhostUserMemory, a_thousand_rejected_mem_tables_with_fds_leak_no_fd) {
    UniqueFd small = test::make_memfd(4096);
    const int before = test::open_fd_count();
    for (int i = 0; i < 1000; ++i) {
        MemoryTable t{};
        t.nregions = 8;
        for (auto& region : t.regions) {
            region = {0, 1 << 20, 0, 0};  // beyond the 4 KiB file
        }
        RequestBuilder req(Request::set_mem_table, kNeedReply);
        req.payload(t);
        for (int f = 0; f < 8; ++f) {
            req.fd(small.get());
        }
        auto r = h.send(req);
        ASSERT_EQ(r.result.error, MessageError::mem_region_beyond_file);
    }
    EXPECT_EQ(test::open_fd_count(), before);
    EXPECT_FALSE(h.device->is_broken());
}

TEST_F(VhostUserMemory, a_thousand_accepted_mem_tables_leak_no_fd_or_mapping) {
    GuestMemory mem;
    const int before = test::open_fd_count();
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(send_table(mem.region(), mem.fd.get()).result.error, MessageError::ok);
    }
    EXPECT_EQ(test::open_fd_count(), before);
    EXPECT_EQ(h.device->memory().use_count(), 2) << "only the device and this test hold it";
}

TEST_F(VhostUserMemory, destroying_the_device_unmaps_its_guest_memory) {
    const int64_t before = live_memory_mappings();
    GuestMemory mem;
    h.set_mem_table(mem);
    EXPECT_EQ(live_memory_mappings(), before + 1);
    h.device.reset();
    EXPECT_EQ(live_memory_mappings(), before);
}

TEST_F(VhostUserMemory, a_stopped_workers_snapshot_keeps_the_old_mapping_until_released) {
    const int64_t before = live_memory_mappings();
    GuestMemory mem;
    h.set_mem_table(mem);
    auto snapshot = h.device->memory();
    h.set_mem_table(mem);
    EXPECT_EQ(live_memory_mappings(), before + 2) << "old map still held by the snapshot";
    snapshot.reset();
    EXPECT_EQ(live_memory_mappings(), before + 1);
}

}  // namespace
}  // namespace vnet::vhost_user
