// Live migration on the device: SET_LOG_BASE and its reply, LOG_ALL and the
// LOG flag of SET_VRING_ADDR turning logging on and off on running rings,
// the areas each ring marks, and every bad log refused with its exact error.
#include <gtest/gtest.h>

#include "unit/vhost_user/device_harness.hpp"
#include "virtio/ring/packed_layout.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::GuestMemory;
using test::RequestBuilder;
using virtio::Feature;

// 1 MiB of guest memory at gpa 0 is 256 pages: 32 bytes of log.
constexpr uint64_t kLogBytes = 32;

class DeviceLogTest : public ::testing::Test {
protected:
    void SetUp() override {
        h.negotiate();
        h.set_mem_table(mem);
    }
    test::Reply set_log_base(uint64_t size, uint64_t offset, int fd) {
        return h.send(RequestBuilder(Request::set_log_base).payload(LogBase{size, offset}).fd(fd));
    }
    test::Reply set_features(virtio::FeatureSet f) {
        return h.send(RequestBuilder(Request::set_features, test::kNeedReply).payload(f.bits()));
    }
    virtio::FeatureSet with_log_all() const {
        return h.device->negotiated_features().with(Feature::vhost_log_all);
    }
    uint64_t used_gpa(uint32_t q) const { return mem.used_uva(q) - GuestMemory::kUva; }

    DeviceHarness h;
    GuestMemory mem;
    UniqueFd log_fd = test::make_sealed_memfd(4096);
};

TEST_F(DeviceLogTest, set_log_base_maps_the_log_and_replies_with_an_empty_set_log_base) {
    auto r = set_log_base(4096, 0, log_fd.get());
    EXPECT_EQ(r.result.error, MessageError::ok);
    ASSERT_TRUE(r.result.has_reply) << "QEMU waits for this reply";
    EXPECT_EQ(r.msg->header.request, static_cast<uint32_t>(Request::set_log_base));
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.size, 0u);
    ASSERT_NE(h.device->dirty_log(), nullptr);
    EXPECT_EQ(h.device->dirty_log()->size_bytes(), 4096u);
    EXPECT_FALSE(h.device->logging()) << "not before LOG_ALL";
}

TEST_F(DeviceLogTest, log_all_restarts_running_rings_with_the_log_and_turning_it_off_without) {
    h.start_ring(mem, 0);
    ASSERT_TRUE(h.device->queue_ready(0));
    ASSERT_EQ(set_log_base(kLogBytes, 0, log_fd.get()).result.error, MessageError::ok);
    EXPECT_EQ(h.observer.count(test::ObserverEvent::stopped), 0u) << "a log alone changes nothing";

    EXPECT_EQ(set_features(with_log_all()).u64(), 0u);
    EXPECT_TRUE(h.device->logging());
    EXPECT_EQ(h.observer.count(test::ObserverEvent::stopped), 1u);
    QueueSnapshot s = h.observer.last_snapshot(0);
    EXPECT_EQ(s.dirty_log.get(), h.device->dirty_log());
    EXPECT_EQ(s.log_areas.ranges[0].gpa, used_gpa(0)) << "no LOG flag: where the used ring lies";
    EXPECT_EQ(s.log_areas.ranges[0].len, virtio::used_ring_bytes(256));
    EXPECT_EQ(s.log_areas.ranges[1].len, 0u);

    // QEMU then repeats each ring's addresses with the LOG flag.
    VringAddr a{0,      VringAddr::kFlagLog, mem.desc_uva(0), mem.used_uva(0), mem.avail_uva(0),
                0x54320};
    EXPECT_EQ(h.send(RequestBuilder(Request::set_vring_addr, test::kNeedReply).payload(a)).u64(),
              0u);
    EXPECT_EQ(h.observer.count(test::ObserverEvent::stopped), 2u);
    s = h.observer.last_snapshot(0);
    EXPECT_EQ(s.log_areas.ranges[0].gpa, 0x54320u);

    EXPECT_EQ(set_features(h.device->negotiated_features().without(Feature::vhost_log_all)).u64(),
              0u);
    EXPECT_FALSE(h.device->logging());
    EXPECT_EQ(h.device->dirty_log(), nullptr) << "the next migration brings its own log";
    EXPECT_TRUE(h.device->queue_ready(0));
    EXPECT_EQ(h.observer.last_snapshot(0).dirty_log, nullptr);
}

TEST_F(DeviceLogTest, other_feature_changes_stay_refused_while_rings_run) {
    h.start_ring(mem, 0);
    auto r = set_features(with_log_all().without(Feature::net_mrg_rxbuf));
    EXPECT_EQ(r.result.error, MessageError::features_changed_while_running);
    EXPECT_FALSE(h.device->logging());
}

TEST_F(DeviceLogTest, packed_rings_mark_the_descriptor_ring_and_the_device_event_area) {
    DeviceHarness p;
    p.negotiate_packed();
    p.set_mem_table(mem);
    p.start_ring(mem, 1, 128);
    p.send(RequestBuilder(Request::set_log_base).payload(LogBase{kLogBytes, 0}).fd(log_fd.get()));
    p.send(RequestBuilder(Request::set_features)
               .payload(p.device->negotiated_features().with(Feature::vhost_log_all).bits()));
    const QueueSnapshot s = p.observer.last_snapshot(1);
    ASSERT_NE(s.dirty_log, nullptr);
    EXPECT_EQ(s.log_areas.ranges[0].gpa, mem.desc_uva(1) - GuestMemory::kUva);
    EXPECT_EQ(s.log_areas.ranges[0].len, virtio::packed_desc_ring_bytes(128));
    EXPECT_EQ(s.log_areas.ranges[1].gpa, used_gpa(1));
    EXPECT_EQ(s.log_areas.ranges[1].len, sizeof(virtio::PackedEventSuppress));
}

TEST_F(DeviceLogTest, a_log_fd_smaller_than_the_log_breaks_the_device) {
    UniqueFd small = test::make_sealed_memfd(16);
    auto r = set_log_base(kLogBytes, 0, small.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_beyond_file);
    EXPECT_TRUE(r.result.disconnect) << "the front end waits for a reply it cannot get";
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_EQ(h.device->dirty_log(), nullptr);
}

TEST_F(DeviceLogTest, a_log_fd_that_is_not_memory_breaks_the_device) {
    // Only a memfd can be sealed: anything else is refused as unsealable.
    UniqueFd event = test::make_eventfd();
    auto r = set_log_base(kLogBytes, 0, event.get());
    EXPECT_EQ(r.result.error, MessageError::log_not_sealed_against_shrink);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(DeviceLogTest, a_log_whose_offset_and_size_wrap_breaks_the_device) {
    auto r = set_log_base(4096, ~uint64_t{0} - 100, log_fd.get());
    EXPECT_EQ(r.result.error, MessageError::mem_region_offset_overflow);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(DeviceLogTest, a_log_that_does_not_cover_guest_memory_breaks_the_device) {
    auto r = set_log_base(kLogBytes - 1, 0, log_fd.get());  // 248 of 256 pages
    EXPECT_EQ(r.result.error, MessageError::log_smaller_than_memory);
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_EQ(h.device->dirty_log(), nullptr);
}

// A front end that could shrink the log would make every mark a SIGBUS
// (hostile-input rule 4): the log must be sealed against shrinking, as
// QEMU seals its own. A refusal leaves the log the device had; SET_LOG_BASE
// has its own reply, so the refusal cannot be told and the device breaks.
class DeviceLogSealTest : public DeviceLogTest {
protected:
    void SetUp() override {
        DeviceLogTest::SetUp();
        h.start_ring(mem, 0);
        ASSERT_EQ(set_log_base(kLogBytes, 0, log_fd.get()).result.error, MessageError::ok);
        ASSERT_EQ(set_features(with_log_all()).u64(), 0u);
        before = h.device->dirty_log();
    }
    void expect_refused(const test::Reply& r) {
        EXPECT_EQ(r.result.error, MessageError::log_not_sealed_against_shrink);
        EXPECT_STREQ(to_string(r.result.error),
                     "dirty log fd is not sealed against shrinking (F_SEAL_SHRINK)");
        EXPECT_EQ(h.device->dirty_log(), before) << "the log in use stays";
        EXPECT_EQ(h.observer.last_snapshot(0).dirty_log.get(), before);
        EXPECT_TRUE(r.result.disconnect);
        EXPECT_TRUE(h.device->is_broken());
    }
    const virtio::DirtyLog* before = nullptr;
};

TEST_F(DeviceLogSealTest, an_unsealed_log_fd_is_refused_with_the_log_in_use_kept) {
    UniqueFd unsealed = test::make_memfd(4096);  // no MFD_ALLOW_SEALING: F_SEAL_SEAL alone
    expect_refused(set_log_base(kLogBytes, 0, unsealed.get()));
}

TEST_F(DeviceLogSealTest, a_log_fd_sealed_without_f_seal_shrink_is_refused) {
    UniqueFd grow_only = test::make_sealed_memfd(4096, F_SEAL_GROW | F_SEAL_SEAL);
    ASSERT_TRUE(grow_only);
    expect_refused(set_log_base(kLogBytes, 0, grow_only.get()));
}

TEST_F(DeviceLogSealTest, a_log_file_that_cannot_be_sealed_is_refused) {
    // A plain file: F_GET_SEALS fails (EINVAL) on most file systems, or
    // reports F_SEAL_SEAL alone on tmpfs; neither keeps it from shrinking.
    char path[] = "/tmp/vnet-log-XXXXXX";
    UniqueFd file(::mkstemp(path));
    ASSERT_TRUE(file);
    ::unlink(path);
    ASSERT_EQ(::ftruncate(file.get(), 4096), 0);
    expect_refused(set_log_base(kLogBytes, 0, file.get()));
}

TEST_F(DeviceLogTest, set_log_base_without_its_fd_is_refused) {
    auto r = h.send(RequestBuilder(Request::set_log_base).payload(LogBase{kLogBytes, 0}));
    EXPECT_EQ(r.result.error, MessageError::wrong_fd_count);
    EXPECT_TRUE(h.device->is_broken());
}

TEST_F(DeviceLogTest, a_log_address_that_wraps_is_refused) {
    VringAddr a{0,
                VringAddr::kFlagLog,
                mem.desc_uva(0),
                mem.used_uva(0),
                mem.avail_uva(0),
                ~uint64_t{0} - 8};
    auto r = h.send(RequestBuilder(Request::set_vring_addr, test::kNeedReply).payload(a));
    EXPECT_EQ(r.result.error, MessageError::vring_log_address_overflow);
    EXPECT_EQ(r.u64(), 1u);
}

}  // namespace
}  // namespace vnet::vhost_user
