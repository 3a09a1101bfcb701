// A VM port during a live migration: on the source, while the front end
// logs, what the port writes into the guest is marked in the dirty log (and
// only then); on the destination, SEND_RARP puts one RARP broadcast from the
// guest's MAC into the next TX burst, which completes to no ring entry.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "packet/rarp_announcement.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"
#include "unit/virtio/marked_pages.hpp"
#include "virtio/log/dirty_log.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using vhost_user::Request;
using vhost_user::test::RequestBuilder;

constexpr uint64_t kPage = virtio::DirtyLog::kPageSize;
constexpr vhost_user::MacAddress kGuestMac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};

// Fills one guest RX buffer with a 60-byte frame, as a tap read would.
void deliver_one(GuestRxHarness& guest) {
    std::span<const iovec> buffer;
    ASSERT_TRUE(guest.port.next_rx_buffer(0, 2048, &buffer));
    guest.port.commit_rx_buffer(0, 12 + 60);
    guest.port.flush_rx_buffers(0);
}

struct LoggingGuest {
    static constexpr size_t kLogBytes = 32;  // the harness's 1 MiB: 256 pages
    GuestRxHarness guest{[](uint16_t, const std::function<void()>& work) { work(); },
                         GuestRxHarness::kRingSize, /*ring_enable=*/true};
    UniqueFd log_fd = vhost_user::test::make_sealed_memfd(4096);
    uint8_t* log = static_cast<uint8_t*>(
        ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, log_fd.get(), 0));
    ~LoggingGuest() { ::munmap(log, 4096); }

    void set_log_all(bool on) {
        const auto f = guest.device->negotiated_features();
        guest.send(RequestBuilder(Request::set_features)
                       .payload((on ? f.with(virtio::Feature::vhost_log_all)
                                    : f.without(virtio::Feature::vhost_log_all))
                                    .bits()));
    }
    void start_logging() {
        guest.send(
            RequestBuilder(Request::set_protocol_features)
                .payload(
                    vhost_user::ProtocolFeatureSet{vhost_user::ProtocolFeature::log_shmfd}.bits()));
        guest.send(RequestBuilder(Request::set_log_base)
                       .payload(vhost_user::LogBase{kLogBytes, 0})
                       .fd(log_fd.get()));
        set_log_all(true);
    }
    std::set<uint64_t> pages() const { return virtio::test::marked_pages(log, kLogBytes); }
    uint64_t buffer_page(uint32_t n) const {
        return (GuestRxHarness::kBuffersGpa + n * GuestRxHarness::kBufferSize) / kPage;
    }
    uint64_t used_page(uint32_t q) const {
        return (guest.mem.used_uva(q) - vhost_user::test::GuestMemory::kUva) / kPage;
    }
};

TEST(VhostUserPortMigration, while_logging_the_filled_buffer_and_the_used_ring_are_marked) {
    LoggingGuest g;
    g.start_logging();
    ASSERT_TRUE(g.guest.device->logging());
    ASSERT_TRUE(g.guest.port.queue_ready(0)) << "restarted with the log";
    g.guest.post_rx_buffers(4);
    std::fill_n(g.log, LoggingGuest::kLogBytes, 0);  // what starting the rings marked
    deliver_one(g.guest);
    EXPECT_EQ(g.guest.used_idx(0), 1);
    EXPECT_EQ(g.pages(), (std::set<uint64_t>{g.buffer_page(0), g.used_page(0)}));
}

TEST(VhostUserPortMigration, with_logging_off_again_nothing_is_marked) {
    LoggingGuest g;
    g.start_logging();
    g.set_log_all(false);
    ASSERT_FALSE(g.guest.device->logging());
    g.guest.post_rx_buffers(4);
    std::fill_n(g.log, LoggingGuest::kLogBytes, 0);
    deliver_one(g.guest);
    EXPECT_EQ(g.guest.used_idx(0), 1);
    EXPECT_TRUE(g.pages().empty());
}

TEST(VhostUserPortMigration, send_rarp_adds_one_announcement_after_the_guests_packets) {
    GuestRxHarness guest;
    guest.post_tx_chain(1, 80);
    guest.port.on_rarp_requested(*guest.device, kGuestMac);

    packet::PacketBurst burst;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 2);
    EXPECT_EQ(burst.packets[0].len, 80u);
    ASSERT_EQ(burst.packets[1].iov_count, 1);
    ASSERT_EQ(burst.packets[1].len, 12u + 60u) << "behind the guest's 12-byte header";
    const auto* bytes =
        static_cast<const uint8_t*>(burst.iovecs[burst.packets[1].first_iov].iov_base);
    EXPECT_EQ(std::vector<uint8_t>(bytes, bytes + 12), std::vector<uint8_t>(12, 0));
    const auto frame = packet::rarp_announcement(kGuestMac);
    EXPECT_EQ(std::vector<uint8_t>(bytes + 12, bytes + 72),
              std::vector<uint8_t>(frame.begin(), frame.end()));

    guest.port.complete_burst(0, burst, 2);
    EXPECT_EQ(guest.used_idx(1), 1) << "the announcement has no ring entry";
    EXPECT_EQ(guest.port.rx_counters(0).packets.get(), 1u) << "nor is it the guest's packet";
    EXPECT_EQ(guest.port.announcements_sent(), 1u);

    packet::PacketBurst next;
    EXPECT_EQ(guest.port.receive_burst(0, next, packet::kMaxBurstPackets), 0) << "sent once";
}

TEST(VhostUserPortMigration, an_announcement_alone_completes_without_a_call) {
    GuestRxHarness guest;
    guest.port.on_rarp_requested(*guest.device, kGuestMac);
    packet::PacketBurst burst;
    ASSERT_EQ(guest.port.receive_burst(0, burst, packet::kMaxBurstPackets), 1);
    EXPECT_EQ(burst.packets[0].token, virtio::NetTxQueue::kNotFromRingToken);
    guest.port.complete_burst(0, burst, 1);
    EXPECT_EQ(guest.used_idx(1), 0);
    EXPECT_EQ(guest.port.rx_counters(0).packets.get(), 0u);
}

TEST(RarpAnnouncement, is_the_frame_qemu_announce_self_sends) {
    const auto f = packet::rarp_announcement(kGuestMac);
    const std::vector<uint8_t> expected_head{
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff,              // broadcast
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56,              // from the guest
        0x80, 0x35,                                      // RARP
        0x00, 0x01, 0x08, 0x00, 6,    4,                 // Ethernet, IPv4, lengths
        0x00, 0x03,                                      // request reverse
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0, 0, 0,  // sender
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0, 0, 0,  // target
    };
    EXPECT_EQ(std::vector<uint8_t>(f.begin(), f.begin() + 42), expected_head);
    EXPECT_EQ(f.size(), 60u);
    EXPECT_EQ(std::vector<uint8_t>(f.begin() + 42, f.end()), std::vector<uint8_t>(18, 0));
}

}  // namespace
}  // namespace vnet::ports
