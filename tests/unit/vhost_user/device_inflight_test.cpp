// INFLIGHT_SHMFD on the device: GET_INFLIGHT_FD allocates and initialises
// the buffer, SET_INFLIGHT_FD takes one back, a ring started over it is
// recovered and its snapshot carries what to resume; every bad message
// breaks the device with its exact error (the CVEs of DPDK's handlers
// included: repeated GET leaking, num_queues unchecked, fds where none go).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "unit/vhost_user/device_harness.hpp"
#include "virtio/inflight/inflight_layout.hpp"

namespace vnet::vhost_user {
namespace {

using test::DeviceHarness;
using test::GuestMemory;
using test::packed_ring_of;
using test::RequestBuilder;
using test::split_ring_of;

constexpr uint16_t kQueues = 4;  // the harness's two queue pairs
constexpr uint16_t kQueueSize = 256;
const uint64_t kStride = virtio::split_inflight_queue_bytes(kQueueSize);

InflightDescription ask(uint16_t queues = kQueues, uint16_t size = kQueueSize) {
    return InflightDescription{0, 0, queues, size, 0};
}

int inflight_mappings() {
    std::ifstream maps("/proc/self/maps");
    int n = 0;
    for (std::string line; std::getline(maps, line);) {
        n += line.find("vnetd-inflight") != std::string::npos;
    }
    return n;
}

class DeviceInflightTest : public ::testing::Test {
protected:
    void SetUp() override {
        h.negotiate();
        h.set_mem_table(mem);
    }
    test::Reply get(const InflightDescription& d, uint32_t flags = MessageHeader::kVersion) {
        return h.send(RequestBuilder(Request::get_inflight_fd, flags).payload(d));
    }
    test::Reply set(const InflightDescription& d, int fd) {
        return h.send(RequestBuilder(Request::set_inflight_fd).payload(d).fd(fd));
    }
    void expect_broken(const test::Reply& r, MessageError e) {
        EXPECT_EQ(r.result.error, e);
        EXPECT_TRUE(r.result.disconnect);
        EXPECT_TRUE(h.device->is_broken());
        EXPECT_EQ(h.device->inflight_queues(), 0u);
    }
    // A buffer as GET makes it, mapped by the test (the front end's view).
    struct Buffer {
        UniqueFd fd;
        uint64_t size = 0;
        uint8_t* host = nullptr;
        virtio::QueueRegionSplit* queue(uint32_t q) const {
            return reinterpret_cast<virtio::QueueRegionSplit*>(host + q * kStride);
        }
    };
    Buffer take_buffer(test::Reply& r) {
        Buffer b;
        InflightDescription d{};
        EXPECT_TRUE(r.msg->read_payload(d));
        b.size = d.mmap_size;
        b.fd = r.msg->take_fd(0);
        b.host = static_cast<uint8_t*>(
            ::mmap(nullptr, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd.get(), 0));
        EXPECT_NE(b.host, MAP_FAILED);
        return b;
    }

    DeviceHarness h;
    GuestMemory mem;
};

TEST_F(DeviceInflightTest, is_offered) {
    EXPECT_TRUE(h.device->offered_protocol_features().has(ProtocolFeature::inflight_shmfd));
}

TEST_F(DeviceInflightTest, get_replies_with_a_sealed_memfd_of_initialised_queue_regions) {
    auto r = get(ask());
    ASSERT_EQ(r.result.error, MessageError::ok);
    ASSERT_TRUE(r.result.has_reply);
    EXPECT_EQ(r.msg->header.flags, 0x5u);
    EXPECT_EQ(r.msg->header.size, sizeof(InflightDescription));
    ASSERT_EQ(r.msg->fd_count, 1u);
    InflightDescription d{};
    ASSERT_TRUE(r.msg->read_payload(d));
    EXPECT_EQ(d.mmap_size, kQueues * kStride);
    EXPECT_EQ(d.mmap_offset, 0u);
    EXPECT_EQ(d.num_queues, kQueues);
    EXPECT_EQ(d.queue_size, kQueueSize);
    struct stat st {};
    ASSERT_EQ(::fstat(r.msg->fds[0].get(), &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), d.mmap_size);
    EXPECT_NE(::fcntl(r.msg->fds[0].get(), F_GET_SEALS) & F_SEAL_SHRINK, 0);
    Buffer b = take_buffer(r);
    for (uint32_t q = 0; q < kQueues; ++q) {
        EXPECT_EQ(b.queue(q)->version, 1) << q;
        EXPECT_EQ(b.queue(q)->desc_num, kQueueSize) << q;
        EXPECT_EQ(b.queue(q)->used_idx, 0) << q;
    }
    EXPECT_EQ(h.device->inflight_queues(), kQueues);
    ::munmap(b.host, b.size);
}

TEST_F(DeviceInflightTest, a_second_get_replaces_the_first_without_leaking_fd_or_mapping) {
    auto first = get(ask());
    first.msg->close_fds();  // the front end's to close
    const int fds = test::open_fd_count();
    EXPECT_EQ(inflight_mappings(), 1);
    for (int i = 0; i < 20; ++i) {
        auto again = get(ask(2, 128));
        ASSERT_EQ(again.result.error, MessageError::ok);
        again.msg->close_fds();
    }
    EXPECT_EQ(test::open_fd_count(), fds);
    EXPECT_EQ(inflight_mappings(), 1) << "only the last buffer stays mapped";
    EXPECT_EQ(h.device->inflight_queues(), 2u);
}

TEST_F(DeviceInflightTest, get_then_set_on_a_new_device_resumes_what_the_first_had_in_flight) {
    auto r = get(ask());
    Buffer b = take_buffer(r);
    h.start_ring(mem, 1);
    ASSERT_TRUE(h.device->queue_ready(1));
    QueueSnapshot s = h.observer.last_snapshot(1);
    ASSERT_TRUE(split_ring_of(s).inflight().active());
    EXPECT_TRUE(split_ring_of(s).resume().empty());
    EXPECT_EQ(s.inflight_resumed, 0u);
    EXPECT_FALSE(h.observer.last_snapshot(0).inflight_mapping.owner) << "ring 0 never started";

    // The first back end took heads 9 then 4 and completed neither; the
    // guest's used->idx is 3 (three earlier completions, all recorded).
    virtio::QueueRegionSplit* q1 = b.queue(1);
    q1->used_idx = 3;
    virtio::split_inflight_descs(q1)[9] = {1, {}, 0, 11};
    virtio::split_inflight_descs(q1)[4] = {1, {}, 0, 12};
    mem.set_used_idx(1, 3);

    DeviceHarness next;
    next.negotiate();
    next.set_mem_table(mem);
    auto sr = next.send(RequestBuilder(Request::set_inflight_fd, test::kNeedReply)
                            .payload(InflightDescription{b.size, 0, kQueues, kQueueSize, 0})
                            .fd(b.fd.get()));
    ASSERT_EQ(sr.u64(), 0u);
    next.start_ring(mem, 1, kQueueSize, /*base=*/7);
    ASSERT_TRUE(next.device->queue_ready(1));
    s = next.observer.last_snapshot(1);
    ASSERT_TRUE(split_ring_of(s).inflight().active());
    EXPECT_EQ(split_ring_of(s).resume(), (std::vector<uint16_t>{9, 4}));
    EXPECT_EQ(s.inflight_resumed, 2u);
    EXPECT_EQ(split_ring_of(s).vring_base(), 3u) << "the resumed heads stand at the used index";
    EXPECT_NE(s.inflight_mapping.owner, nullptr);
    ::munmap(b.host, b.size);
}

TEST_F(DeviceInflightTest, a_ring_over_a_region_of_another_size_breaks_the_device) {
    auto r = get(ask(kQueues, 128));
    ASSERT_EQ(r.result.error, MessageError::ok);
    h.start_ring(mem, 0, 256);
    EXPECT_FALSE(h.device->queue_ready(0));
    EXPECT_TRUE(h.device->is_broken());
    EXPECT_NE(h.device->broken_reason().find("inflight region does not recover"), std::string::npos)
        << h.device->broken_reason();
}

TEST_F(DeviceInflightTest, rings_beyond_num_queues_run_untracked) {
    ASSERT_EQ(get(ask(2)).result.error, MessageError::ok);
    h.start_ring(mem, 3);
    ASSERT_TRUE(h.device->queue_ready(3));
    EXPECT_FALSE(split_ring_of(h.observer.last_snapshot(3)).inflight().active());
}

// ---- bad messages: exact error, device broken, nothing kept ---------------

TEST_F(DeviceInflightTest, get_with_zero_queues_breaks_the_device) {
    expect_broken(get(ask(0)), MessageError::inflight_num_queues_invalid);
}

TEST_F(DeviceInflightTest, get_with_more_queues_than_the_device_has_breaks_it) {
    // CVE-2021-3839: num_queues indexes the rings.
    expect_broken(get(ask(kQueues + 1)), MessageError::inflight_num_queues_invalid);
}

TEST_F(DeviceInflightTest, get_with_a_queue_size_that_is_not_a_power_of_two_breaks_the_device) {
    expect_broken(get(ask(kQueues, 0)), MessageError::inflight_queue_size_invalid);
}

TEST_F(DeviceInflightTest, get_with_a_queue_size_above_32768_breaks_the_device) {
    expect_broken(get(ask(kQueues, 65535)), MessageError::inflight_queue_size_invalid);
}

TEST_F(DeviceInflightTest, get_with_an_fd_attached_breaks_the_device_and_closes_it) {
    // CVE-2022-0669: an fd on a request that takes none.
    UniqueFd extra = test::make_memfd(4096);
    const int fds = test::open_fd_count();
    auto r = h.send(RequestBuilder(Request::get_inflight_fd).payload(ask()).fd(extra.get()));
    expect_broken(r, MessageError::unexpected_fds);
    EXPECT_EQ(test::open_fd_count(), fds);
}

TEST_F(DeviceInflightTest, get_with_a_short_payload_breaks_the_device) {
    auto r = h.send(RequestBuilder(Request::get_inflight_fd).payload(ask()).size(20));
    expect_broken(r, MessageError::payload_size_mismatch);
}

TEST_F(DeviceInflightTest, get_with_reply_ack_and_need_reply_still_breaks_it_has_its_own_reply) {
    expect_broken(get(ask(0), test::kNeedReply), MessageError::inflight_num_queues_invalid);
}

TEST_F(DeviceInflightTest, get_without_the_feature_negotiated_is_refused) {
    DeviceHarness p;
    p.negotiate(ProtocolFeatureSet{ProtocolFeature::reply_ack}.bits());
    auto r = p.send(RequestBuilder(Request::get_inflight_fd).payload(ask()));
    EXPECT_EQ(r.result.error, MessageError::protocol_feature_not_negotiated);
    EXPECT_TRUE(p.device->is_broken());
    EXPECT_EQ(r.msg->fd_count, 0u);
}

TEST_F(DeviceInflightTest, get_while_a_ring_runs_breaks_the_device) {
    h.start_ring(mem, 0);
    expect_broken(get(ask()), MessageError::ring_running);
}

TEST_F(DeviceInflightTest, get_with_a_split_queue_size_of_100_breaks_the_device) {
    // virtio 1.2 §2.7: split queue sizes are powers of two.
    expect_broken(get(ask(kQueues, 100)), MessageError::inflight_queue_size_invalid);
}

// ---- packed rings -------------------------------------------------------------------

class DevicePackedInflightTest : public DeviceInflightTest {
protected:
    void SetUp() override {
        h.negotiate_packed();
        h.set_mem_table(mem);
    }
    static virtio::QueueRegionPacked* queue(uint8_t* host, uint16_t size, uint32_t q) {
        return reinterpret_cast<virtio::QueueRegionPacked*>(
            host + q * virtio::packed_inflight_queue_bytes(size));
    }
    // A front end reconnecting with `b` to a new device and starting ring 1.
    std::unique_ptr<DeviceHarness> reconnect(const Buffer& b, uint16_t size = kQueueSize) {
        auto next = std::make_unique<DeviceHarness>();
        next->negotiate_packed();
        next->set_mem_table(mem);
        auto sr = next->send(RequestBuilder(Request::set_inflight_fd, test::kNeedReply)
                                 .payload(InflightDescription{b.size, 0, kQueues, size, 0})
                                 .fd(b.fd.get()));
        EXPECT_EQ(sr.u64(), 0u);
        next->start_ring(mem, 1, size, kFreshBase);
        return next;
    }
    static constexpr uint32_t kFreshBase = 0x80008000;
};

TEST_F(DevicePackedInflightTest, get_makes_packed_regions_of_any_queue_size_up_to_32768) {
    // virtio 1.2 §2.8: a packed queue size need not be a power of two.
    auto r = get(ask(kQueues, 100));
    ASSERT_EQ(r.result.error, MessageError::ok);
    Buffer b = take_buffer(r);
    EXPECT_EQ(b.size, kQueues * virtio::packed_inflight_queue_bytes(100));
    for (uint32_t q = 0; q < kQueues; ++q) {
        virtio::QueueRegionPacked* region = queue(b.host, 100, q);
        EXPECT_EQ(region->version, 1) << q;
        EXPECT_EQ(region->desc_num, 100) << q;
        EXPECT_EQ(region->used_wrap_counter, 1) << q;
        EXPECT_EQ(virtio::packed_inflight_descs(region)[99].next, 100) << q;
    }
    ::munmap(b.host, b.size);
}

TEST_F(DevicePackedInflightTest, get_with_a_queue_size_above_32768_breaks_the_device) {
    expect_broken(get(ask(kQueues, 32769)), MessageError::inflight_queue_size_invalid);
}

TEST_F(DevicePackedInflightTest, a_new_device_resumes_the_region_and_starts_where_it_says) {
    auto r = get(ask());
    Buffer b = take_buffer(r);
    h.start_ring(mem, 1, kQueueSize, kFreshBase);
    ASSERT_TRUE(h.device->queue_ready(1));
    QueueSnapshot s = h.observer.last_snapshot(1);
    ASSERT_TRUE(packed_ring_of(s).inflight().active());
    EXPECT_TRUE(packed_ring_of(s).resume().chains.empty());
    EXPECT_TRUE(packed_ring_of(s).resume().from_base)
        << "a fresh buffer: the base says where the ring is";

    // The first back end had used 5 slots and took chain 9 (one descriptor, entry 0).
    virtio::QueueRegionPacked* q1 = queue(b.host, kQueueSize, 1);
    q1->used_idx = q1->old_used_idx = 5;
    q1->free_head = q1->old_free_head = 1;
    virtio::packed_inflight_descs(q1)[0] = {1, 0, 1, 0, 1, 7, 9, 0x80, 64, 0x1000};

    auto next = reconnect(b);
    ASSERT_TRUE(next->device->queue_ready(1));
    s = next->observer.last_snapshot(1);
    const virtio::PackedResume& resume = packed_ring_of(s).resume();
    ASSERT_TRUE(packed_ring_of(s).inflight().active());
    ASSERT_EQ(resume.chains.size(), 1u);
    EXPECT_EQ(s.inflight_resumed, 1u);
    EXPECT_EQ(resume.chains[0].id, 9);
    EXPECT_EQ(resume.used, (virtio::PackedPosition{5, true}));
    EXPECT_EQ(resume.slots, 1u);
    EXPECT_EQ(resume.descs[0].addr, 0x1000u);
    EXPECT_NE(s.inflight_mapping.owner, nullptr);
    ::munmap(b.host, b.size);
}

TEST_F(DevicePackedInflightTest, a_hostile_region_breaks_the_device_with_its_exact_error) {
    auto r = get(ask());
    Buffer b = take_buffer(r);
    queue(b.host, kQueueSize, 1)->free_head = 300;
    auto next = reconnect(b);
    EXPECT_FALSE(next->device->queue_ready(1));
    EXPECT_TRUE(next->device->is_broken());
    EXPECT_EQ(next->device->broken_reason(),
              "vring 1: inflight region does not recover for this ring (inflight region "
              "free_head beyond desc_num)");
    ::munmap(b.host, b.size);
}

TEST_F(DeviceInflightTest, a_split_buffer_then_packed_features_are_refused) {
    DeviceHarness p;
    p.send(RequestBuilder(Request::set_protocol_features).payload(kDefaultProtocolFeatures.bits()));
    ASSERT_EQ(p.send(RequestBuilder(Request::get_inflight_fd).payload(ask())).result.error,
              MessageError::ok);
    auto r = p.send(
        RequestBuilder(Request::set_features, test::kNeedReply)
            .payload(p.device->offered_features().without(virtio::Feature::vhost_log_all).bits()));
    EXPECT_EQ(r.result.error, MessageError::inflight_ring_format_mismatch);
    EXPECT_EQ(r.u64(), 1u);
    EXPECT_FALSE(p.device->negotiated_features().has(virtio::Feature::ring_packed));
}

class DeviceSetInflightTest : public DeviceInflightTest {
protected:
    // A sealed memfd as GET makes them.
    UniqueFd sealed(uint64_t size) {
        UniqueFd fd(::memfd_create("test-inflight", MFD_CLOEXEC | MFD_ALLOW_SEALING));
        EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
        EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
        return fd;
    }
    InflightDescription whole(uint64_t size, uint64_t offset = 0) {
        return InflightDescription{size, offset, kQueues, kQueueSize, 0};
    }
};

TEST_F(DeviceSetInflightTest, a_sealed_buffer_that_covers_every_queue_is_taken) {
    UniqueFd fd = sealed(kQueues * kStride);
    EXPECT_EQ(set(whole(kQueues * kStride), fd.get()).result.error, MessageError::ok);
    EXPECT_EQ(h.device->inflight_queues(), kQueues);
}

TEST_F(DeviceSetInflightTest, a_size_below_num_queues_regions_breaks_the_device) {
    UniqueFd fd = sealed(kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride - 1), fd.get()),
                  MessageError::inflight_region_too_small);
}

TEST_F(DeviceSetInflightTest, a_buffer_beyond_its_file_breaks_the_device) {
    UniqueFd fd = sealed(kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride, 4096), fd.get()),
                  MessageError::mem_region_beyond_file);
}

TEST_F(DeviceSetInflightTest, an_offset_and_size_that_wrap_break_the_device) {
    UniqueFd fd = sealed(kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride, ~uint64_t{0} - 63), fd.get()),
                  MessageError::mem_region_offset_overflow);
}

TEST_F(DeviceSetInflightTest, a_misaligned_offset_breaks_the_device) {
    UniqueFd fd = sealed(2 * kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride, 8), fd.get()),
                  MessageError::inflight_region_misaligned);
}

TEST_F(DeviceSetInflightTest, an_unsealed_buffer_breaks_the_device) {
    UniqueFd fd = test::make_memfd(kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride), fd.get()),
                  MessageError::inflight_not_sealed_against_shrink);
}

TEST_F(DeviceSetInflightTest, an_fd_that_is_not_memory_breaks_the_device) {
    UniqueFd event = test::make_eventfd();
    expect_broken(set(whole(kQueues * kStride), event.get()),
                  MessageError::inflight_not_sealed_against_shrink);
}

TEST_F(DeviceSetInflightTest, without_its_fd_it_breaks_the_device) {
    expect_broken(h.send(RequestBuilder(Request::set_inflight_fd).payload(whole(kStride))),
                  MessageError::wrong_fd_count);
}

TEST_F(DeviceSetInflightTest, with_more_queues_than_the_device_has_it_breaks_the_device) {
    UniqueFd fd = sealed(8 * kStride);
    InflightDescription d = whole(8 * kStride);
    d.num_queues = 8;
    expect_broken(set(d, fd.get()), MessageError::inflight_num_queues_invalid);
}

TEST_F(DeviceSetInflightTest, after_the_rings_started_it_breaks_the_device) {
    h.start_ring(mem, 0);
    UniqueFd fd = sealed(kQueues * kStride);
    expect_broken(set(whole(kQueues * kStride), fd.get()), MessageError::ring_running);
}

}  // namespace
}  // namespace vnet::vhost_user
