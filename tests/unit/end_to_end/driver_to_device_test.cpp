// The whole stack in one process: our virtio-net driver (the stand-in for a
// guest) and vnetd's back end talk over a real unix socket pair; packets go
// through real rings in a memfd both ways and are checked byte for byte.
// Every test runs over both ring formats: split, and packed (the driver
// negotiates VIRTIO_F_RING_PACKED; a queue size that is no power of two).
//
//   NetDriver --socketpair--> BackendConnection -> VhostUserDevice
//                                                   | QueueObserver
//   worker thread:  VhostUserPort TX ring -> capture sink
//                   scripted source -> VhostUserPort RX ring
#include <sys/socket.h>

#include <gtest/gtest.h>
#include <chrono>
#include <cstring>
#include <thread>
#include <type_traits>

#include "dataplane/forward_path.hpp"
#include "dataplane/worker.hpp"
#include "frontend/net_driver.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/vhost_user/vhost_user_port.hpp"
#include "unit/dataplane/fake_ports.hpp"
#include "vhost_user/backend_connection.hpp"
#include "virtio/net_header.hpp"

namespace vnet {
namespace {

using namespace std::chrono_literals;

constexpr size_t kHeader = sizeof(virtio::NetHeader);

std::vector<uint8_t> frame_bytes(uint32_t seq, size_t len) {
    std::vector<uint8_t> f(len);
    for (size_t i = 0; i < len; ++i) {
        f[i] = static_cast<uint8_t>(seq * 31 + i);
    }
    return f;
}

struct SplitRings {
    using Ring = frontend::DriverSplitRing;
    static constexpr bool kPacked = false;
    static constexpr uint16_t kQueueSize = 64;
};
struct PackedRings {
    using Ring = frontend::DriverPackedRing;
    static constexpr bool kPacked = true;
    static constexpr uint16_t kQueueSize = 100;
};

template <typename Format>
class DriverToDevice : public ::testing::Test {
protected:
    using Ring = typename Format::Ring;

    void SetUp() override {
        int sv[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        driver_socket_.reset(sv[1]);
        worker_.start();
        port_ = std::make_unique<ports::VhostUserPort>(
            "vm", 1,
            [this](uint16_t, const std::function<void()>& work) { worker_.run_sync(work); });
        vhost_user::DeviceConfig config;
        config.name = "e2e";
        connection_ = std::make_unique<vhost_user::BackendConnection>(reactor_, UniqueFd(sv[0]),
                                                                      config, port_.get(), [] {});
        reactor_thread_ = std::thread([this] { reactor_.run(); });
    }

    void TearDown() override {
        driver_.reset();
        reactor_.stop();
        reactor_thread_.join();
        connection_.reset();  // stops the rings through the worker
        worker_.stop();
    }

    void start_driver(bool mrg_rxbuf) {
        frontend::NetDriverConfig config;
        config.queue_size = Format::kQueueSize;
        config.packed = Format::kPacked;
        config.wanted_features =
            virtio::FeatureSet{virtio::Feature::version_1, virtio::Feature::ring_event_idx};
        if (mrg_rxbuf) {
            config.wanted_features = config.wanted_features.with(virtio::Feature::net_mrg_rxbuf);
        }
        driver_ = std::make_unique<frontend::NetDriver>(
            frontend::FrontendSession(std::move(driver_socket_), "e2e-driver"), config);
        ASSERT_EQ(driver_->packed(), Format::kPacked);
    }
    Ring& tx_ring() { return driver_->template tx_ring<Ring>(); }
    Ring& rx_ring() { return driver_->template rx_ring<Ring>(); }

    // Waits until the ring has `n` completions, collecting them.
    std::vector<frontend::Completion> wait_completions(Ring& ring, size_t n) {
        std::vector<frontend::Completion> done;
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (done.size() < n && std::chrono::steady_clock::now() < deadline) {
            frontend::Completion batch[64];
            frontend::UsedRingError error = frontend::UsedRingError::ok;
            uint16_t got = ring.reclaim(batch, &error);
            EXPECT_EQ(error, frontend::UsedRingError::ok);
            done.insert(done.end(), batch, batch + got);
            if (got == 0) {
                std::this_thread::sleep_for(1ms);
            }
        }
        return done;
    }

    // Declared first so they outlive the worker that runs paths over them.
    dataplane::testing::FakeSink sink;
    dataplane::testing::FakeFillSource source;
    io::EpollReactor reactor_;
    std::thread reactor_thread_;
    dataplane::Worker worker_{dataplane::WorkerOptions{}};
    std::unique_ptr<ports::VhostUserPort> port_;
    std::unique_ptr<vhost_user::BackendConnection> connection_;
    UniqueFd driver_socket_;
    std::unique_ptr<frontend::NetDriver> driver_;
};

using RingFormats = ::testing::Types<SplitRings, PackedRings>;
TYPED_TEST_SUITE(DriverToDevice, RingFormats);

TYPED_TEST(DriverToDevice, guest_tx_packets_reach_the_destination_byte_exact_in_bursts) {
    this->worker_.run_sync([&] {
        this->worker_.add_engine(std::make_unique<dataplane::ForwardPath>(
            *this->port_, 0, this->sink, 0, ports::QueuePairOptions{}));
    });
    this->start_driver(true);
    ASSERT_TRUE(this->port_->queue_ready(0));

    constexpr uint32_t kPackets = 300;  // more than the ring: slots are reused
    auto& tx = this->tx_ring();
    uint32_t sent = 0, completed = 0;
    while (completed < kPackets) {
        while (sent < kPackets && sent - completed < tx.size()) {
            uint32_t slot = sent % tx.size();
            std::span<std::byte> buf = this->driver_->tx_slot(slot);
            size_t len = 60 + (sent * 7) % 1400;
            std::memset(buf.data(), 0, kHeader);
            auto f = frame_bytes(sent, len);
            std::memcpy(buf.data() + kHeader, f.data(), len);
            ASSERT_TRUE(tx.add_buffer(this->driver_->gpa_of(buf.data()),
                                      static_cast<uint32_t>(kHeader + len),
                                      frontend::BufferAccess::device_reads, slot));
            ++sent;
        }
        tx.publish();
        if (tx.kick_needed()) {
            this->driver_->kick(frontend::NetDriver::kTxQueue);
        }
        completed += static_cast<uint32_t>(this->wait_completions(tx, 1).size());
    }

    this->worker_.run_sync([] {});  // the sink is read on this thread after the worker's writes
    ASSERT_EQ(this->sink.received.size(), kPackets);
    for (uint32_t i = 0; i < kPackets; ++i) {
        size_t len = 60 + (i * 7) % 1400;
        auto expected = frame_bytes(i, len);
        ASSERT_EQ(this->sink.received[i].size(), kHeader + len) << "packet " << i;
        EXPECT_EQ(0, std::memcmp(this->sink.received[i].data() + kHeader, expected.data(), len))
            << "packet " << i;
    }
    EXPECT_EQ(this->port_->rx_counters(0).packets.get(), kPackets);
    EXPECT_GT(this->port_->rx_counters(0).bursts.get(), 0u);
    EXPECT_EQ(this->port_->rx_counters(0).total_drops(), 0u);
}

TYPED_TEST(DriverToDevice, packets_from_a_source_land_in_guest_rx_buffers_with_num_buffers_set) {
    constexpr uint32_t kPackets = 40;
    for (uint32_t i = 0; i < kPackets; ++i) {
        auto f = frame_bytes(i, 100 + i);
        std::vector<uint8_t> with_header(kHeader, 0);
        with_header.insert(with_header.end(), f.begin(), f.end());
        this->source.frames.push_back(with_header);
    }
    this->start_driver(true);
    auto& rx = this->rx_ring();
    for (uint16_t slot = 0; slot < rx.size(); ++slot) {
        std::span<std::byte> buf = this->driver_->rx_buffer(slot);
        ASSERT_TRUE(rx.add_buffer(this->driver_->gpa_of(buf.data()),
                                  static_cast<uint32_t>(buf.size()),
                                  frontend::BufferAccess::device_writes, slot));
    }
    rx.publish();
    this->worker_.run_sync([&] {
        this->worker_.add_engine(std::make_unique<dataplane::ForwardPath>(
            this->source, 0, *this->port_, 0, ports::QueuePairOptions{}));
    });

    std::vector<frontend::Completion> done = this->wait_completions(rx, kPackets);
    ASSERT_EQ(done.size(), kPackets);
    for (uint32_t i = 0; i < kPackets; ++i) {
        std::span<std::byte> buf = this->driver_->rx_buffer(done[i].cookie);
        ASSERT_EQ(done[i].len, kHeader + 100 + i) << "packet " << i;
        virtio::NetHeader header;
        std::memcpy(&header, buf.data(), kHeader);
        EXPECT_EQ(header.num_buffers, 1) << "packet " << i;
        auto expected = frame_bytes(i, 100 + i);
        EXPECT_EQ(0, std::memcmp(buf.data() + kHeader, expected.data(), expected.size()))
            << "packet " << i;
    }
    EXPECT_EQ(this->port_->tx_counters(0).packets.get(), kPackets);
}

TYPED_TEST(DriverToDevice, stopping_the_device_after_traffic_takes_the_rings_back_from_the_worker) {
    this->worker_.run_sync([&] {
        this->worker_.add_engine(std::make_unique<dataplane::ForwardPath>(
            *this->port_, 0, this->sink, 0, ports::QueuePairOptions{}));
    });
    this->start_driver(false);
    auto& tx = this->tx_ring();
    for (uint32_t i = 0; i < 10; ++i) {
        std::span<std::byte> buf = this->driver_->tx_slot(i);
        std::memset(buf.data(), 0, kHeader + 60);
        ASSERT_TRUE(tx.add_buffer(this->driver_->gpa_of(buf.data()), kHeader + 60,
                                  frontend::BufferAccess::device_reads, i));
    }
    tx.publish();
    this->driver_->kick(frontend::NetDriver::kTxQueue);
    ASSERT_EQ(this->wait_completions(tx, 10).size(), 10u);
    ASSERT_TRUE(this->driver_->stop());  // SET_VRING_ENABLE 0 + GET_VRING_BASE per ring
    EXPECT_FALSE(this->port_->queue_ready(0));
}

}  // namespace
}  // namespace vnet
