// VhostUserPort on packed rings (VIRTIO_F_RING_PACKED): the port's TX pop
// loop, skip of a chain too long for one write, and the RX window's
// rewind, driven by the driver-side DriverPackedRing as the guest.
#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <spdlog/sinks/ostream_sink.h>

#include <optional>
#include <sstream>
#include <vector>

#include "frontend/driver_packed_ring.hpp"
#include "ports/vhost_user/vhost_user_port.hpp"
#include "unit/vhost_user/device_harness.hpp"

namespace vnet::ports {
namespace {

namespace vt = vhost_user::test;

constexpr uint16_t kRingSize = 2048;  // a chain of UIO_MAXIOV + 1 slots fits
constexpr uint64_t kFrameGpa = 0xa0000;
constexpr uint32_t kFrameLen = 12 + 64;
constexpr uint64_t kRxGpa = 0xc0000;
constexpr uint32_t kRxLen = 2048;

class PackedPort : public ::testing::Test {
protected:
    void SetUp() override {
        vhost_user::DeviceConfig config;
        config.name = "packed";
        config.features =
            virtio::FeatureSet{virtio::Feature::version_1, virtio::Feature::ring_packed};
        device = std::make_unique<vhost_user::VhostUserDevice>(config, &port);
        send(vt::RequestBuilder(vhost_user::Request::set_features).payload(config.features.bits()));
        vhost_user::MemoryTable t{};
        t.nregions = 1;
        t.regions[0] = mem.region();
        send(vt::RequestBuilder(vhost_user::Request::set_mem_table)
                 .payload(t)
                 .size(vhost_user::memory_table_payload_size(1))
                 .fd(mem.fd.get()));
        for (uint32_t q : {0u, 1u}) {
            frontend::DriverPackedRingLayout l{
                reinterpret_cast<virtio::PackedDesc*>(host(mem.desc_uva(q))),
                reinterpret_cast<virtio::PackedEventSuppress*>(host(mem.avail_uva(q))),
                reinterpret_cast<virtio::PackedEventSuppress*>(host(mem.used_uva(q))), kRingSize};
            rings[q].emplace(l, false);
            send(vt::RequestBuilder(vhost_user::Request::set_vring_num)
                     .payload(vhost_user::VringState{q, kRingSize}));
            send(vt::RequestBuilder(vhost_user::Request::set_vring_base)
                     .payload(vhost_user::VringState{q, 0x8000}));
            send(vt::RequestBuilder(vhost_user::Request::set_vring_addr)
                     .payload(vhost_user::VringAddr{q, 0, mem.desc_uva(q), mem.used_uva(q),
                                                    mem.avail_uva(q), 0}));
            send(vt::RequestBuilder(vhost_user::Request::set_vring_kick)
                     .payload(uint64_t{q})
                     .fd(kick.get()));
        }
        ASSERT_TRUE(port.queue_ready(0));
    }
    void TearDown() override { device.reset(); }

    void send(vt::RequestBuilder& r) {
        vhost_user::Message reply;
        device->handle_message(*r.msg, reply);
    }
    uint8_t* host(uint64_t uva) { return mem.host + (uva - mem.kUva); }
    std::vector<frontend::Completion> reclaim(uint32_t q) {
        std::vector<frontend::Completion> out(64);
        frontend::UsedRingError error = frontend::UsedRingError::ok;
        out.resize(rings[q]->reclaim(out, &error));
        EXPECT_EQ(error, frontend::UsedRingError::ok);
        return out;
    }
    uint64_t drops(packet::DropReason r) {
        return port.rx_counters(0).drops[static_cast<size_t>(r)].get();
    }

    vt::GuestMemory mem;
    UniqueFd kick{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    VhostUserPort port{"vm", 1, [](uint16_t, const std::function<void()>& work) { work(); }};
    std::unique_ptr<vhost_user::VhostUserDevice> device;
    std::optional<frontend::DriverPackedRing> rings[2];
};

TEST_F(PackedPort, transmits_and_completes_packed_tx_chains) {
    for (uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(rings[1]->add_buffer(kFrameGpa, kFrameLen, frontend::BufferAccess::device_reads,
                                         10 + i));
    }
    rings[1]->publish();
    packet::PacketBurst burst;
    ASSERT_EQ(port.receive_burst(0, burst, packet::kMaxBurstPackets), 3);
    EXPECT_EQ(burst.packets[0].len, kFrameLen);
    port.complete_burst(0, burst, 3);
    const auto done = reclaim(1);
    ASSERT_EQ(done.size(), 3u);
    EXPECT_EQ(done[0].cookie, 10u);
    EXPECT_EQ(done[2].cookie, 12u);
    EXPECT_EQ(port.rx_counters(0).packets.get(), 3u);
}

TEST_F(PackedPort, a_chain_longer_than_one_write_takes_is_skipped_and_completed) {
    std::vector<frontend::BufferSegment> segs(
        packet::kMaxBurstIovecs + 1, {kFrameGpa, 16, frontend::BufferAccess::device_reads});
    ASSERT_TRUE(rings[1]->add_chain(segs, 1));
    ASSERT_TRUE(
        rings[1]->add_buffer(kFrameGpa, kFrameLen, frontend::BufferAccess::device_reads, 2));
    rings[1]->publish();
    packet::PacketBurst burst;
    ASSERT_EQ(port.receive_burst(0, burst, packet::kMaxBurstPackets), 1);
    EXPECT_EQ(drops(packet::DropReason::too_many_segments), 1u);
    port.complete_burst(0, burst, 1);
    const auto done = reclaim(1);
    ASSERT_EQ(done.size(), 2u);  // the skipped chain came back too, in order
    EXPECT_EQ(done[0].cookie, 1u);
    EXPECT_EQ(done[1].cookie, 2u);
    EXPECT_TRUE(port.queue_ready(0));
}

TEST_F(PackedPort, unused_rx_buffers_are_rewound_and_used_next_burst_in_order) {
    for (uint32_t i = 0; i < 4; ++i) {
        ASSERT_TRUE(rings[0]->add_buffer(kRxGpa + i * kRxLen, kRxLen,
                                         frontend::BufferAccess::device_writes, 20 + i));
    }
    rings[0]->publish();
    std::span<const iovec> buf;
    ASSERT_TRUE(port.next_rx_buffer(0, 100, &buf));
    port.commit_rx_buffer(0, 100);
    port.flush_rx_buffers(0);  // three popped ahead, given back
    auto done = reclaim(0);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].cookie, 20u);
    EXPECT_EQ(done[0].len, 100u);
    for (uint32_t len : {200u, 300u}) {
        ASSERT_TRUE(port.next_rx_buffer(0, len, &buf));
        port.commit_rx_buffer(0, len);
    }
    port.flush_rx_buffers(0);
    done = reclaim(0);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[0].cookie, 21u);
    EXPECT_EQ(done[0].len, 200u);
    EXPECT_EQ(done[1].cookie, 22u);
    // Given-back buffers are not new work: the path may sleep.
    EXPECT_TRUE(port.arm_transmit_wait(0));
}

// A packed ring's vring base packs two positions and two wrap counters
// (vhost-user.rst): the log line says them apart, not as one number.
TEST_F(PackedPort, the_stop_log_line_gives_each_index_with_its_wrap_counter) {
    for (uint32_t i = 0; i < 3; ++i) {
        ASSERT_TRUE(rings[1]->add_buffer(kFrameGpa, kFrameLen, frontend::BufferAccess::device_reads,
                                         10 + i));
    }
    rings[1]->publish();
    packet::PacketBurst burst;
    ASSERT_EQ(port.receive_burst(0, burst, 2), 2);
    port.complete_burst(0, burst, 2);

    std::ostringstream lines;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
    const Logger logger = make_logger("vm");
    logger->sinks().push_back(sink);
    send(vt::RequestBuilder(vhost_user::Request::get_vring_base)
             .payload(vhost_user::VringState{1, 0}));
    logger->sinks().pop_back();

    EXPECT_NE(lines.str().find("ring 1 stopped at avail index 2 wrap 1, used index 2 wrap 1: 1 "
                               "packet(s) the guest queued were not taken"),
              std::string::npos)
        << lines.str();
}

}  // namespace
}  // namespace vnet::ports
