// Vring setup, start, stop and the dataplane contract.
#include <gtest/gtest.h>

#include "unit/vhost_user/device_harness.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::GuestMemory;
using test::kNeedReply;
using test::ObserverEvent;
using test::RequestBuilder;
using test::split_ring_of;

class VhostUserVring : public ::testing::Test {
protected:
    void SetUp() override {
        h.negotiate();
        h.set_mem_table(mem);
    }
    // Sends with NEED_REPLY, so a refusal is acked instead of breaking the device.
    test::Reply acked(RequestBuilder& r) {
        r.msg->header.flags |= MessageHeader::kFlagNeedReply;
        return h.send(r);
    }

    DeviceHarness h;
    GuestMemory mem;
};

TEST_F(VhostUserVring, becomes_ready_after_num_base_addr_kick_and_enable) {
    h.vring_num(0, 256);
    h.vring_base(0, 0);
    h.vring_addr(mem, 0);
    h.vring_kick(0);
    EXPECT_FALSE(h.device->queue_ready(0)) << "not enabled yet";
    h.vring_enable(0);
    ASSERT_TRUE(h.device->queue_ready(0));
    ASSERT_EQ(h.observer.count(ObserverEvent::ready), 1u);
    QueueSnapshot s = h.observer.last_snapshot(0);
    const virtio::SplitRingLayout& l = split_ring_of(s).split().layout();
    EXPECT_EQ(l.size, 256);
    // The device's own mapping of the region, at the offsets of the front end's addresses.
    uint8_t* base = h.device->memory()->regions()[0].host_addr;
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.desc), base + 0x10000);
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.avail), base + 0x18000);
    EXPECT_EQ(reinterpret_cast<uint8_t*>(l.used), base + 0x1a000);
    EXPECT_GE(s.kick_fd, 0);
    EXPECT_EQ(s.memory, h.device->memory());
    EXPECT_EQ(s.features, h.device->negotiated_features());
}

TEST_F(VhostUserVring, kick_fd_is_made_non_blocking) {
    h.start_ring(mem, 0);
    QueueSnapshot s = h.device->queue_snapshot(0);
    EXPECT_NE(::fcntl(s.kick_fd, F_GETFL) & O_NONBLOCK, 0);
}

TEST_F(VhostUserVring, rejects_vring_num_not_power_of_two) {
    auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{0, 100}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
}

TEST_F(VhostUserVring, rejects_vring_num_zero) {
    auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{0, 0}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
}

TEST_F(VhostUserVring, rejects_vring_num_above_32768) {
    auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{0, 65536}));
    EXPECT_EQ(r.result.error, MessageError::vring_num_invalid);
}

TEST_F(VhostUserVring, accepts_vring_num_32768) {
    auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{0, 32768}));
    EXPECT_EQ(r.result.error, MessageError::ok);
}

TEST_F(VhostUserVring, rejects_vring_index_above_max_as_u32) {
    // 0x10000 would pass as index 0 if truncated to u16 (CVE-2020-10723).
    for (uint32_t index : {4u, 0x10000u, 0xffffffffu}) {
        auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{index, 256}));
        EXPECT_EQ(r.result.error, MessageError::vring_index_out_of_range) << index;
    }
}

TEST_F(VhostUserVring, rejects_vring_fd_index_above_max) {
    auto r = acked(RequestBuilder(Request::set_vring_call).payload(uint64_t{4}).fd(h.kick.get()));
    EXPECT_EQ(r.result.error, MessageError::vring_index_out_of_range);
}

TEST_F(VhostUserVring, rejects_reserved_bits_in_vring_fd_payload) {
    auto r =
        acked(RequestBuilder(Request::set_vring_kick).payload(uint64_t{0x200} | kVringNoFdFlag));
    EXPECT_EQ(r.result.error, MessageError::vring_reserved_bits_set);
}

TEST_F(VhostUserVring, rejects_kick_fd_that_is_not_an_eventfd) {
    auto [a, b] = test::make_socket_pair();
    RequestBuilder req(Request::set_vring_kick);
    req.payload(uint64_t{0}).fd(a.get());
    const int received = req.msg->fds[0].get();
    auto r = acked(req);
    EXPECT_EQ(r.result.error, MessageError::not_an_eventfd);
    EXPECT_FALSE(test::fd_is_open(received));
}

TEST_F(VhostUserVring, rejects_call_fd_that_is_a_pipe) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    UniqueFd r0(p[0]), w0(p[1]);
    auto r = acked(RequestBuilder(Request::set_vring_call).payload(uint64_t{0}).fd(w0.get()));
    EXPECT_EQ(r.result.error, MessageError::not_an_eventfd);
}

TEST_F(VhostUserVring, refuses_set_vring_num_on_running_ring) {
    h.start_ring(mem, 0);
    auto r = acked(RequestBuilder(Request::set_vring_num).payload(VringState{0, 128}));
    EXPECT_EQ(r.result.error, MessageError::ring_running);
    EXPECT_EQ(virtio::ring_size(h.device->queue_snapshot(0).ring), 256);
}

TEST_F(VhostUserVring, refuses_set_vring_base_on_running_ring) {
    h.start_ring(mem, 0);
    auto r = acked(RequestBuilder(Request::set_vring_base).payload(VringState{0, 7}));
    EXPECT_EQ(r.result.error, MessageError::ring_running);
    EXPECT_EQ(h.device->queue_snapshot(0).vring_base, 0u);
}

TEST_F(VhostUserVring, refuses_new_vring_addr_on_running_ring_but_accepts_a_repeat) {
    h.start_ring(mem, 0);
    EXPECT_EQ(h.vring_addr(mem, 0).result.error, MessageError::ok);
    VringAddr moved{0, 0, mem.desc_uva(1), mem.used_uva(1), mem.avail_uva(1), 0};
    auto r = acked(RequestBuilder(Request::set_vring_addr).payload(moved));
    EXPECT_EQ(r.result.error, MessageError::ring_running);
}

TEST_F(VhostUserVring, rejects_vring_base_above_0xffff) {
    auto r = acked(RequestBuilder(Request::set_vring_base).payload(VringState{0, 0x10000}));
    EXPECT_EQ(r.result.error, MessageError::vring_base_out_of_range);
}

TEST_F(VhostUserVring, rejects_misaligned_desc_table) {
    VringAddr a{0, 0, mem.desc_uva(0) + 8, mem.used_uva(0), mem.avail_uva(0), 0};
    auto r = acked(RequestBuilder(Request::set_vring_addr).payload(a));
    EXPECT_EQ(r.result.error, MessageError::vring_addr_misaligned);
}

TEST_F(VhostUserVring, rejects_misaligned_used_ring) {
    VringAddr a{0, 0, mem.desc_uva(0), mem.used_uva(0) + 2, mem.avail_uva(0), 0};
    auto r = acked(RequestBuilder(Request::set_vring_addr).payload(a));
    EXPECT_EQ(r.result.error, MessageError::vring_addr_misaligned);
}

TEST_F(VhostUserVring, rejects_vring_addr_flags_other_than_log) {
    VringAddr a{0, 0x2, mem.desc_uva(0), mem.used_uva(0), mem.avail_uva(0), 0};
    auto r = acked(RequestBuilder(Request::set_vring_addr).payload(a));
    EXPECT_EQ(r.result.error, MessageError::vring_addr_flags_invalid);
}

TEST_F(VhostUserVring, rejects_vring_enable_value_other_than_0_or_1) {
    auto r = acked(RequestBuilder(Request::set_vring_enable).payload(VringState{0, 2}));
    EXPECT_EQ(r.result.error, MessageError::vring_enable_value_invalid);
}

TEST_F(VhostUserVring, ring_outside_guest_memory_breaks_the_device_at_kick) {
    h.vring_num(0, 256);
    h.vring_base(0, 0);
    VringAddr a{0, 0, GuestMemory::kUva + GuestMemory::kSize, mem.used_uva(0), mem.avail_uva(0), 0};
    EXPECT_EQ(acked(RequestBuilder(Request::set_vring_addr).payload(a)).result.error,
              MessageError::ok)
        << "addresses are translated when the ring starts";
    auto r = h.vring_kick(0);
    EXPECT_EQ(r.result.error, MessageError::ring_not_in_guest_memory);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(VhostUserVring, ring_straddling_the_region_end_breaks_the_device) {
    h.vring_num(0, 256);
    h.vring_base(0, 0);
    // 256 descriptors take 4096 bytes; start 2048 bytes before the end.
    const uint64_t desc = GuestMemory::kUva + GuestMemory::kSize - 2048;
    h.send(RequestBuilder(Request::set_vring_addr)
               .payload(VringAddr{0, 0, desc, mem.used_uva(0), mem.avail_uva(0), 0}));
    auto r = h.vring_kick(0);
    EXPECT_EQ(r.result.error, MessageError::ring_not_in_guest_memory);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(VhostUserVring, vring_addr_before_the_memory_table_is_translated_at_start) {
    DeviceHarness fresh;
    fresh.negotiate();
    fresh.vring_num(0, 256);
    fresh.vring_base(0, 0);
    EXPECT_EQ(fresh.vring_addr(mem, 0).result.error, MessageError::ok);
    fresh.vring_kick(0);
    fresh.vring_enable(0);
    EXPECT_FALSE(fresh.device->queue_ready(0));
    fresh.set_mem_table(mem);
    EXPECT_TRUE(fresh.device->queue_ready(0));
}

TEST_F(VhostUserVring, get_vring_base_stops_the_ring_and_returns_the_workers_index) {
    h.start_ring(mem, 0);
    h.observer.stop_index_override = 42;
    auto r = h.send(RequestBuilder(Request::get_vring_base).payload(VringState{0, 0}));
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.size, sizeof(VringState));
    VringState s{};
    ASSERT_TRUE(r.msg->read_payload(s));
    EXPECT_EQ(s.index, 0u);
    EXPECT_EQ(s.num, 42u);
    EXPECT_FALSE(h.device->queue_ready(0));
    ASSERT_FALSE(h.observer.events.empty());
    EXPECT_EQ(h.observer.events.back().kind, ObserverEvent::stopped);
}

TEST_F(VhostUserVring, get_vring_base_does_not_reset_the_index) {
    h.start_ring(mem, 0, 256, 0);
    h.observer.stop_index_override = 9;
    h.send(RequestBuilder(Request::get_vring_base).payload(VringState{0, 0}));
    h.observer.stop_index_override = -1;
    auto r = h.send(RequestBuilder(Request::get_vring_base).payload(VringState{0, 0}));
    VringState s{};
    r.msg->read_payload(s);
    EXPECT_EQ(s.num, 9u);
}

TEST_F(VhostUserVring, stopped_ring_needs_num_base_addr_and_kick_again_before_it_runs) {
    h.start_ring(mem, 0);
    h.send(RequestBuilder(Request::get_vring_base).payload(VringState{0, 0}));
    h.vring_num(0, 256);
    h.vring_base(0, 0);
    h.vring_addr(mem, 0);
    EXPECT_FALSE(h.device->queue_ready(0)) << "no kick since the stop";
    h.vring_kick(0);
    EXPECT_TRUE(h.device->queue_ready(0));
}

TEST_F(VhostUserVring, stopped_ring_does_not_run_on_a_kick_alone) {
    h.start_ring(mem, 0);
    h.send(RequestBuilder(Request::get_vring_base).payload(VringState{0, 0}));
    h.vring_kick(0);
    EXPECT_FALSE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 1u);
}

TEST_F(VhostUserVring, used_index_at_start_is_read_from_the_guest) {
    mem.set_used_idx(0, 17);
    h.start_ring(mem, 0, 256, 0);  // virtio-user reconnect: base 0
    QueueSnapshot s = h.device->queue_snapshot(0);
    EXPECT_EQ(split_ring_of(s).split().used_idx(), 17);
    EXPECT_EQ(split_ring_of(s).vring_base(), 17u)
        << "base follows the guest's used index (DPDK rule)";
}

TEST_F(VhostUserVring, guest_memory_truncated_under_us_breaks_the_device_instead_of_crashing) {
    // Hostile-input rule 4: the used ring's page is gone when the ring starts.
    ASSERT_EQ(::ftruncate(mem.fd.get(), 0), 0);
    h.vring_num(0, 256);
    h.vring_base(0, 0);
    h.vring_addr(mem, 0);
    h.vring_kick(0);
    auto r = h.vring_enable(0);
    EXPECT_TRUE(r.result.disconnect);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_NE(h.device->broken_reason().find("truncated"), std::string::npos);
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 0u);
}

TEST_F(VhostUserVring, disable_stops_the_ring_and_enable_restarts_it) {
    h.start_ring(mem, 0);
    h.vring_enable(0, 0);
    EXPECT_FALSE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 1u);
    h.vring_enable(0, 1);
    EXPECT_TRUE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 2u);
}

TEST_F(VhostUserVring, rings_are_enabled_implicitly_without_the_protocol_features_bit) {
    DeviceHarness legacy;
    legacy.send(RequestBuilder(Request::set_features)
                    .payload(virtio::FeatureSet{virtio::Feature::version_1}.bits()));
    legacy.set_mem_table(mem);
    legacy.vring_num(0, 256);
    legacy.vring_base(0, 0);
    legacy.vring_addr(mem, 0);
    legacy.vring_kick(0);
    EXPECT_TRUE(legacy.device->queue_ready(0));
}

TEST_F(VhostUserVring, ring_is_not_ready_before_set_features) {
    DeviceHarness fresh;
    fresh.set_mem_table(mem);
    fresh.start_ring(mem, 0);
    EXPECT_FALSE(fresh.device->queue_ready(0));
    fresh.send(
        RequestBuilder(Request::set_features).payload(fresh.device->offered_features().bits()));
    EXPECT_TRUE(fresh.device->queue_ready(0));
}

TEST_F(VhostUserVring, new_call_fd_on_a_ready_ring_is_announced_before_the_old_one_closes) {
    UniqueFd call1 = test::make_eventfd();
    h.send(RequestBuilder(Request::set_vring_call).payload(uint64_t{0}).fd(call1.get()));
    h.start_ring(mem, 0);
    const int old_call = h.device->queue_snapshot(0).call_fd;
    ASSERT_GE(old_call, 0);
    UniqueFd call2 = test::make_eventfd();
    h.send(RequestBuilder(Request::set_vring_call).payload(uint64_t{0}).fd(call2.get()));
    ASSERT_EQ(h.observer.count(ObserverEvent::call_changed), 1u);
    const int new_call = h.observer.events.back().fd;
    EXPECT_EQ(h.device->queue_snapshot(0).call_fd, new_call);
    EXPECT_TRUE(h.device->queue_ready(0)) << "a call change does not stop the ring";
    if (new_call != old_call) {
        EXPECT_FALSE(test::fd_is_open(old_call));
    }
}

TEST_F(VhostUserVring, call_with_nofd_means_no_notifications) {
    h.start_ring(mem, 0);
    h.send(RequestBuilder(Request::set_vring_call).payload(uint64_t{kVringNoFdFlag}));
    EXPECT_EQ(h.device->queue_snapshot(0).call_fd, -1);
}

TEST_F(VhostUserVring, new_kick_fd_on_a_ready_ring_stops_and_restarts_it) {
    h.start_ring(mem, 0);
    UniqueFd kick2 = test::make_eventfd();
    h.send(RequestBuilder(Request::set_vring_kick).payload(uint64_t{0}).fd(kick2.get()));
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 1u);
    EXPECT_EQ(h.observer.count(ObserverEvent::ready), 2u);
    EXPECT_TRUE(h.device->queue_ready(0));
}

TEST_F(VhostUserVring, destroying_the_device_stops_ready_rings) {
    h.start_ring(mem, 0);
    h.start_ring(mem, 1);
    h.device.reset();
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 2u);
}

TEST_F(VhostUserVring, broken_device_stops_its_rings) {
    h.start_ring(mem, 0);
    h.device->mark_broken("guest broke a ring rule");
    EXPECT_FALSE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.count(ObserverEvent::stopped), 1u);
}

TEST_F(VhostUserVring, reset_owner_stops_rings_and_forgets_their_setup) {
    h.start_ring(mem, 0);
    h.send(RequestBuilder(Request::reset_owner));
    EXPECT_FALSE(h.device->queue_ready(0));
    EXPECT_FALSE(h.device->is_broken());
    h.vring_kick(0);
    EXPECT_FALSE(h.device->queue_ready(0));
}

}  // namespace
}  // namespace vnet::vhost_user
