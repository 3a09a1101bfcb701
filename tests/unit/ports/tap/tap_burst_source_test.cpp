// TapPort as a burst source (what a switch reads from a pod's tap and from a
// VXLAN uplink's tap), through a real tap: frames sent into the tap from the
// host side come out of receive_burst byte for byte, in order, none lost and
// none twice, whether the reads go in io_uring batches or one readv each;
// a queue holding more than a burst is read in full bursts; an empty queue
// gives nothing and counts nothing. Needs root (a tap); skipped otherwise.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "ports/tap/tap_port.hpp"
#include "unit/ports/tap/tap_frames.hpp"
#include "virtio/features.hpp"

namespace vnet::ports {
namespace {

using testing::can_make_taps;
using testing::FrameId;
using testing::fresh_tap_name;
using testing::TapFrame;
using testing::TapFrameKind;

// Every frame of a case stays queued until read (tun drops beyond
// txqueuelen); up only once IPv6 is off, so the link sends nothing of its own.
std::unique_ptr<TapPort> quiet_tap(io::BatchMode mode) {
    TapPortOptions o;
    o.tap.name = fresh_tap_name("vbs");
    o.tap.txqueuelen = 4096;
    o.tap.link_up = false;
    o.submit_mode = mode;
    auto tap = std::make_unique<TapPort>("tap", o);
    std::ofstream("/proc/sys/net/ipv6/conf/" + tap->device().name() + "/disable_ipv6") << "1";
    tap->device().set_link_up(true);
    return tap;
}

void inject(const std::string& ifname, TapFrameKind kind, size_t len, uint32_t count) {
    testing::TapInjector injector(ifname);
    ASSERT_TRUE(injector.ok()) << "AF_PACKET socket on " << ifname << ": " << std::strerror(errno);
    for (uint32_t seq = 0; seq < count; ++seq) {
        ASSERT_TRUE(injector.send(testing::make_tap_frame(kind, 0, seq, len)))
            << "send: " << std::strerror(errno);
    }
}

struct Drained {
    uint32_t frames = 0;   // ours, checked
    uint16_t largest = 0;  // the largest burst
    uint32_t empty_polls = 0;
};

// Reads bursts until `count` of our frames came out (or the queue stays
// empty), checking each against what was sent and the order.
// `first` is the sequence number the first of them must have.
Drained drain(TapPort& tap, TapFrameKind kind, size_t len, uint32_t count, uint32_t first = 0) {
    Drained d;
    packet::PacketBurst burst;
    uint32_t next = first;
    while (d.frames < count && d.empty_polls < 1000) {
        const uint16_t got = tap.receive_burst(0, burst, packet::kMaxBurstPackets);
        if (got == 0) {
            ++d.empty_polls;
            ::usleep(1000);
            continue;
        }
        EXPECT_EQ(got, burst.count);
        d.largest = std::max(d.largest, got);
        for (uint16_t i = 0; i < burst.count; ++i) {
            const packet::BurstPacket& p = burst.packets[i];
            EXPECT_EQ(p.iov_count, 1u);
            const auto* data = static_cast<const uint8_t*>(burst.iovecs[p.first_iov].iov_base);
            const uint8_t* frame = data + burst.header_size;
            const size_t frame_len = p.len - burst.header_size;
            const std::optional<FrameId> id = testing::tap_frame_id(frame, frame_len);
            if (!id) {
                continue;
            }
            EXPECT_EQ(id->seq, next) << "out of order";
            next = id->seq + 1;
            const TapFrame want = testing::make_tap_frame(kind, 0, id->seq, len);
            EXPECT_TRUE(frame_len == want.bytes.size() &&
                        std::memcmp(frame, want.bytes.data(), frame_len) == 0)
                << "seq " << id->seq << ": bytes differ";
            ++d.frames;
        }
        tap.complete_burst(0, burst, burst.count);
        burst.clear();
    }
    return d;
}

class TapBurstSource : public ::testing::TestWithParam<io::BatchMode> {
protected:
    void SetUp() override {
        if (!can_make_taps()) {
            GTEST_SKIP() << "needs root and /dev/net/tun";
        }
        tap_ = quiet_tap(GetParam());
    }
    std::unique_ptr<TapPort> tap_;
};

TEST_P(TapBurstSource, a_deep_queue_comes_out_exactly_in_full_bursts) {
    constexpr uint32_t kFrames = 1000;
    inject(tap_->device().name(), TapFrameKind::udp, 64, kFrames);
    const Drained d = drain(*tap_, TapFrameKind::udp, 64, kFrames);
    EXPECT_EQ(d.frames, kFrames);
    EXPECT_EQ(d.largest, packet::kMaxBurstPackets) << "a queue of 1000 read less than a burst";
    EXPECT_EQ(tap_->rx_counters(0).total_drops(), 0u);
}

TEST_P(TapBurstSource, frames_sent_a_few_at_a_time_come_out_exactly) {
    // Bursts of every size from 1 to 9, read between the sends: each ends
    // with a read that finds the queue empty, inside an io_uring batch for
    // the larger ones.
    uint32_t sent = 0;
    uint32_t received = 0;
    testing::TapInjector injector(tap_->device().name());
    ASSERT_TRUE(injector.ok());
    packet::PacketBurst burst;
    for (uint32_t round = 0; round < 30; ++round) {
        const uint32_t n = 1 + (round * 7) % 9;
        for (uint32_t i = 0; i < n; ++i) {
            ASSERT_TRUE(injector.send(testing::make_tap_frame(TapFrameKind::udp, 0, sent++, 1400)));
        }
        ASSERT_EQ(drain(*tap_, TapFrameKind::udp, 1400, n, sent - n).frames, n)
            << "round " << round;
        received += n;
    }
    EXPECT_EQ(received, sent);
    EXPECT_EQ(tap_->receive_burst(0, burst, packet::kMaxBurstPackets), 0);
    EXPECT_EQ(tap_->rx_counters(0).total_drops(), 0u);
}

TEST_P(TapBurstSource, gso_super_frames_come_out_whole) {
    tap_->follow_peer_features(
        virtio::FeatureSet{virtio::Feature::net_guest_csum, virtio::Feature::net_guest_tso4});
    constexpr uint32_t kFrames = 100;
    inject(tap_->device().name(), TapFrameKind::tcp_gso, 65000, kFrames);
    const Drained d = drain(*tap_, TapFrameKind::tcp_gso, 65000, kFrames);
    EXPECT_EQ(d.frames, kFrames);
    EXPECT_EQ(tap_->rx_counters(0).total_drops(), 0u);
}

TEST_P(TapBurstSource, an_empty_queue_gives_nothing_and_counts_nothing) {
    packet::PacketBurst burst;
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(tap_->receive_burst(0, burst, packet::kMaxBurstPackets), 0);
        EXPECT_EQ(burst.count, 0);
    }
    EXPECT_EQ(tap_->rx_counters(0).packets.get(), 0u);
    EXPECT_EQ(tap_->rx_counters(0).total_drops(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, TapBurstSource,
                         ::testing::Values(io::BatchMode::io_uring, io::BatchMode::writev),
                         [](const auto& mode) { return std::string(io::to_string(mode.param)); });

}  // namespace
}  // namespace vnet::ports
