// Tap -> guest, the host -> VM path, through a real tap: frames sent into the
// tap from the host side must reach the guest's RX buffers exactly as sent
// (byte for byte, in order per flow, none lost, none twice), whatever the
// frame (64 B, 1500 B, a 64 KB GSO super-frame), the ring format, the
// guest's buffers (mergeable or not) and the tap's queues (one, four).
//
//   TapInjector (AF_PACKET) -> tap -> TapPort reader -> ForwardPath (fill)
//     -> VhostUserPort RX ring <- NetDriver, our virtio-net driver as the
//        guest, over a unix socket pair, in this process
//
// A guest that stops refilling its RX ring halfway must cost nothing: the
// worker sleeps (no spin) and vnetd takes from the tap only what it can
// place, so the rest waits in tun's queue and arrives once the guest posts
// buffers again. Needs root (a tap); skipped otherwise.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "dataplane/forward_path.hpp"
#include "dataplane/worker.hpp"
#include "frontend/net_driver.hpp"
#include "io/epoll_reactor.hpp"
#include "ports/tap/tap_port.hpp"
#include "ports/vhost_user/vhost_user_port.hpp"
#include "unit/ports/tap/tap_frames.hpp"
#include "vhost_user/backend_connection.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {
namespace {

using namespace std::chrono_literals;
using testing::can_make_taps;
using testing::FrameId;
using testing::fresh_tap_name;
using testing::TapFrame;
using testing::TapFrameKind;

constexpr size_t kHeader = sizeof(virtio::NetHeader);

uint64_t link_stat(const std::string& ifname, const char* stat) {
    std::ifstream in("/sys/class/net/" + ifname + "/statistics/" + stat);
    uint64_t v = 0;
    in >> v;
    return v;
}

TapPortOptions tap_options(uint16_t queues) {
    TapPortOptions o;
    o.tap.name = fresh_tap_name("vrx");
    // Room for every frame of a case while the guest stalls: tun drops
    // beyond it, and the test counts none.
    o.tap.txqueuelen = 8192;
    // Up only once IPv6 is off on it (quiet_and_up): a fresh link sends
    // neighbour discovery frames of its own, which would take guest buffers.
    o.tap.link_up = false;
    o.queues = queues;
    return o;
}

void quiet_and_up(TapPort& tap) {
    std::ofstream("/proc/sys/net/ipv6/conf/" + tap.device().name() + "/disable_ipv6") << "1";
    tap.device().set_link_up(true);
}

// What one case sends: `flows` flows of `per_flow` frames of `len` bytes,
// interleaved (flow 0 seq 0, flow 1 seq 0, ...).
struct Traffic {
    TapFrameKind kind;
    size_t len;
    uint16_t flows;
    uint32_t per_flow;
    uint32_t total() const { return uint32_t{flows} * per_flow; }
};

// Checks one received frame (virtio-net header included) against what was
// sent and the order of its flow; returns false for a frame not ours.
class Receipt {
public:
    explicit Receipt(const Traffic& t) : traffic_(t) {}

    bool take(const uint8_t* data, size_t len) {
        if (len < kHeader) {
            ADD_FAILURE() << "a frame shorter than the virtio-net header";
            return false;
        }
        const std::optional<FrameId> id = testing::tap_frame_id(data + kHeader, len - kHeader);
        if (!id) {
            ++foreign_;
            return false;
        }
        const TapFrame want =
            testing::make_tap_frame(traffic_.kind, id->flow, id->seq, traffic_.len);
        EXPECT_EQ(len - kHeader, want.bytes.size()) << "flow " << id->flow << " seq " << id->seq;
        EXPECT_TRUE(len - kHeader == want.bytes.size() &&
                    std::memcmp(data + kHeader, want.bytes.data(), want.bytes.size()) == 0)
            << "flow " << id->flow << " seq " << id->seq << ": bytes differ";
        virtio::NetHeader h;
        std::memcpy(&h, data, kHeader);
        if (traffic_.kind == TapFrameKind::tcp_gso) {
            EXPECT_EQ(h.gso_type, virtio::NetHeader::kGsoTcpV4) << "a GSO frame lost its header";
            EXPECT_EQ(h.gso_size, testing::kTapFrameMss);
        }
        uint32_t& next = next_seq_[id->flow];
        EXPECT_EQ(id->seq, next) << "flow " << id->flow << " out of order";
        next = id->seq + 1;
        ++ours_;
        return true;
    }
    uint32_t ours() const { return ours_; }
    uint32_t foreign() const { return foreign_; }
    // Every flow complete.
    void expect_complete() const {
        EXPECT_EQ(ours_, traffic_.total());
        for (uint16_t f = 0; f < traffic_.flows; ++f) {
            auto it = next_seq_.find(f);
            EXPECT_EQ(it == next_seq_.end() ? 0u : it->second, traffic_.per_flow) << "flow " << f;
        }
    }

private:
    Traffic traffic_;
    std::map<uint16_t, uint32_t> next_seq_;
    uint32_t ours_ = 0;
    uint32_t foreign_ = 0;
};

void inject(const std::string& ifname, const Traffic& t) {
    testing::TapInjector injector(ifname);
    ASSERT_TRUE(injector.ok()) << "AF_PACKET socket on " << ifname << ": " << std::strerror(errno);
    for (uint32_t s = 0; s < t.per_flow; ++s) {
        for (uint16_t f = 0; f < t.flows; ++f) {
            ASSERT_TRUE(injector.send(testing::make_tap_frame(t.kind, f, s, t.len)))
                << "send: " << std::strerror(errno);
        }
    }
}

// ---- one queue pair: through vhost-user into our driver -----------------------

struct SplitRings {
    using Ring = frontend::DriverSplitRing;
    static constexpr bool kPacked = false;
    static constexpr uint16_t kQueueSize = 256;
};
struct PackedRings {
    using Ring = frontend::DriverPackedRing;
    static constexpr bool kPacked = true;
    static constexpr uint16_t kQueueSize = 200;
};

template <typename Format>
class TapToGuest : public ::testing::Test {
protected:
    using Ring = typename Format::Ring;

    void SetUp() override {
        if (!can_make_taps()) {
            GTEST_SKIP() << "needs root and /dev/net/tun";
        }
        int sv[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        driver_socket_.reset(sv[1]);
        worker_.start();
        port_ = std::make_unique<VhostUserPort>(
            "vm", 1,
            [this](uint16_t, const std::function<void()>& work) { worker_.run_sync(work); });
        vhost_user::DeviceConfig config;
        config.name = "tap-to-guest";
        connection_ = std::make_unique<vhost_user::BackendConnection>(reactor_, UniqueFd(sv[0]),
                                                                      config, port_.get(), [] {});
        reactor_thread_ = std::thread([this] { reactor_.run(); });
        tap_ = std::make_unique<TapPort>("tap", tap_options(1));
        quiet_and_up(*tap_);
    }

    void TearDown() override {
        if (!reactor_thread_.joinable()) {
            return;
        }
        driver_.reset();
        reactor_.stop();
        reactor_thread_.join();
        connection_.reset();
        worker_.run_sync([this] {
            if (path_ != nullptr) {
                worker_.remove_engine(path_);
            }
        });
        worker_.stop();
    }

    // The guest: our driver with EVENT_IDX, GSO receive offloads or not,
    // and mergeable buffers or not (then each buffer holds a 64 KB frame).
    // Without GSO a frame fits one 2 KB mergeable buffer, so the tap reads
    // in batches (one system call each); with it, vnetd must lend 64 KB
    // before each read, which goes one frame at a time.
    void start(bool mrg_rxbuf, bool gso) {
        frontend::NetDriverConfig config;
        config.queue_size = Format::kQueueSize;
        config.packed = Format::kPacked;
        config.wanted_features =
            virtio::FeatureSet{virtio::Feature::version_1, virtio::Feature::ring_event_idx};
        if (gso) {
            config.wanted_features = config.wanted_features.with(virtio::Feature::net_guest_csum)
                                         .with(virtio::Feature::net_guest_tso4);
        }
        if (mrg_rxbuf) {
            config.wanted_features = config.wanted_features.with(virtio::Feature::net_mrg_rxbuf);
        } else {
            config.rx_buffer_bytes = static_cast<uint32_t>(kHeader + 65536 + 64);
        }
        driver_ = std::make_unique<frontend::NetDriver>(
            frontend::FrontendSession(std::move(driver_socket_), "tap-to-guest"), config);
        ASSERT_EQ(driver_->mrg_rxbuf(), mrg_rxbuf);
        // What the control plane does when the guest negotiates.
        tap_->follow_peer_features(driver_->negotiated_features());
        worker_.run_sync([this] {
            path_ = &worker_.add_engine(std::make_unique<dataplane::ForwardPath>(
                *tap_, 0, *port_, 0, ports::QueuePairOptions{}));
        });
    }
    Ring& rx() { return driver_->template rx_ring<Ring>(); }

    void post(uint16_t slot) {
        std::span<std::byte> buf = driver_->rx_buffer(slot);
        ASSERT_TRUE(rx().add_buffer(driver_->gpa_of(buf.data()), static_cast<uint32_t>(buf.size()),
                                    frontend::BufferAccess::device_writes, slot));
    }
    void publish_posted() {
        rx().publish();
        if (rx().kick_needed()) {
            driver_->kick(frontend::NetDriver::kRxQueue);
        }
    }

    // Takes completions until `want` of our frames arrived (or 10 s),
    // reassembling merged frames; reposts each buffer once its frame is
    // checked while `refill` holds.
    void receive(Receipt& receipt, uint32_t want, bool refill) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        std::vector<uint8_t> frame;
        uint16_t missing = 0;
        std::vector<uint16_t> pieces;
        while (receipt.ours() < want && std::chrono::steady_clock::now() < deadline) {
            frontend::Completion batch[64];
            frontend::UsedRingError error = frontend::UsedRingError::ok;
            const uint16_t got = rx().reclaim(batch, &error);
            ASSERT_EQ(error, frontend::UsedRingError::ok);
            if (got == 0) {
                std::this_thread::sleep_for(200us);
                continue;
            }
            for (uint16_t i = 0; i < got; ++i) {
                const auto slot = static_cast<uint16_t>(batch[i].cookie);
                const std::span<std::byte> buf = driver_->rx_buffer(slot);
                ASSERT_LE(batch[i].len, buf.size());
                const auto* data = reinterpret_cast<const uint8_t*>(buf.data());
                if (missing == 0) {
                    virtio::NetHeader h;
                    std::memcpy(&h, data, kHeader);
                    missing = h.num_buffers;
                    ASSERT_GE(missing, 1);
                    frame.clear();
                    pieces.clear();
                }
                frame.insert(frame.end(), data, data + batch[i].len);
                pieces.push_back(slot);
                if (--missing == 0) {
                    receipt.take(frame.data(), frame.size());
                    for (uint16_t s : pieces) {
                        if (refill) {
                            post(s);
                        } else {
                            held_.push_back(s);
                        }
                    }
                }
            }
            if (refill) {
                publish_posted();
            }
        }
        ASSERT_EQ(missing, 0) << "a merged frame's buffers did not all arrive";
    }

    // Sends `t` into the tap, lets the guest take it all; with `stall`, the
    // guest posts buffers for only part of it and stops refilling until
    // that part arrived, then checks vnetd waits quietly.
    void run(const Traffic& t, bool mrg_rxbuf, bool stall) {
        start(mrg_rxbuf, t.kind == TapFrameKind::tcp_gso);
        const std::string ifname = tap_->device().name();
        inject(ifname, t);
        Receipt receipt(t);
        // A few buffers per frame when merged (64 KB over 2 KB buffers).
        const uint32_t per_frame =
            (static_cast<uint32_t>(t.len) + kHeader + driver_->rx_buffer_bytes() - 1) /
            driver_->rx_buffer_bytes();
        const uint16_t ring = rx().size();
        uint16_t first_post = ring;
        if (stall) {
            // Half of the traffic (at most the ring), whole frames only.
            const uint32_t half_frames = std::max<uint32_t>(1, t.total() / 2);
            first_post = static_cast<uint16_t>(std::min<uint32_t>(ring / per_frame, half_frames) *
                                               per_frame);
        }
        for (uint16_t s = 0; s < first_post; ++s) {
            post(s);
        }
        publish_posted();
        if (stall) {
            // The frames vnetd can place: it reads a frame only into room
            // for the largest one (it cannot know the size before the
            // read), so with mergeable buffers the last few stay unused.
            const uint32_t buffers_per_read =
                mrg_rxbuf ? (tap_->max_packet_size() + driver_->rx_buffer_bytes() - 1) /
                                driver_->rx_buffer_bytes()
                          : 1;
            uint32_t placed = 0;
            for (uint32_t left = first_post; left >= buffers_per_read && placed < t.total();
                 left -= per_frame) {
                ++placed;
            }
            receive(receipt, placed, /*refill=*/false);
            ASSERT_EQ(receipt.ours(), placed);
            // The guest sleeps with no buffers: vnetd must neither spin nor
            // take frames it cannot place (they stay in tun's queue).
            const uint64_t taken = tap_->rx_counters(0).packets.get();
            const uint64_t rounds = worker_.rounds();
            std::this_thread::sleep_for(100ms);
            EXPECT_LT(worker_.rounds() - rounds, 50u) << "the worker spins on a full guest ring";
            EXPECT_EQ(tap_->rx_counters(0).packets.get(), taken);
            EXPECT_EQ(taken, uint64_t{placed} + receipt.foreign());
            // The guest wakes up: everything else arrives, in order.
            for (uint16_t s = first_post; s < ring; ++s) {
                post(s);
            }
            for (uint16_t s : held_) {
                post(s);
            }
            publish_posted();
        }
        receive(receipt, t.total(), /*refill=*/true);
        receipt.expect_complete();
        EXPECT_EQ(link_stat(ifname, "tx_dropped"), 0u) << "tun dropped frames";
        worker_.run_sync([] {});  // the counters after the worker's last writes
        EXPECT_EQ(tap_->rx_counters(0).packets.get(), uint64_t{t.total()} + receipt.foreign());
        EXPECT_EQ(tap_->rx_counters(0).total_drops(), 0u);
        EXPECT_EQ(port_->tx_counters(0).total_drops(), 0u);
    }

    io::EpollReactor reactor_;
    std::thread reactor_thread_;
    dataplane::Worker worker_{dataplane::WorkerOptions{}};
    std::unique_ptr<TapPort> tap_;
    std::unique_ptr<VhostUserPort> port_;
    std::unique_ptr<vhost_user::BackendConnection> connection_;
    dataplane::ForwardPath* path_ = nullptr;
    std::vector<uint16_t> held_;  // buffers the stalled guest took back but did not post again
    UniqueFd driver_socket_;
    std::unique_ptr<frontend::NetDriver> driver_;
};

using RingFormats = ::testing::Types<SplitRings, PackedRings>;
TYPED_TEST_SUITE(TapToGuest, RingFormats);

TYPED_TEST(TapToGuest, delivers_64_byte_frames_exactly_across_a_guest_that_stops_refilling) {
    this->run(Traffic{TapFrameKind::udp, 64, 4, 1000}, /*mrg_rxbuf=*/true, /*stall=*/true);
}

TYPED_TEST(TapToGuest, delivers_1500_byte_frames_exactly_into_mergeable_buffers) {
    this->run(Traffic{TapFrameKind::udp, 1514, 4, 500}, /*mrg_rxbuf=*/true, /*stall=*/false);
}

TYPED_TEST(TapToGuest, delivers_1500_byte_frames_exactly_across_a_guest_that_stops_refilling) {
    this->run(Traffic{TapFrameKind::udp, 1514, 2, 400}, /*mrg_rxbuf=*/false, /*stall=*/true);
}

TYPED_TEST(TapToGuest, delivers_64k_gso_frames_whole_over_mergeable_buffers) {
    this->run(Traffic{TapFrameKind::tcp_gso, 64000, 2, 40}, /*mrg_rxbuf=*/true, /*stall=*/true);
}

TYPED_TEST(TapToGuest, delivers_64k_gso_frames_whole_into_big_buffers) {
    this->run(Traffic{TapFrameKind::tcp_gso, 64000, 2, 40}, /*mrg_rxbuf=*/false, /*stall=*/false);
}

// ---- four queue pairs: each reads its own tap queue ---------------------------

// A guest's RX side reduced to what the path uses: per queue pair, fixed
// buffers lent one at a time or in batches, frames checked as they are
// committed, and a budget of buffers the "guest" has posted.
class FakeGuestRx : public Port, public BufferLender {
public:
    static constexpr uint32_t kBuffer = 2048;
    FakeGuestRx(uint16_t queues, const Traffic& t)
        : Port("fake-guest"), queues_(queues), receipt_(t) {}

    uint16_t queue_count() const override { return static_cast<uint16_t>(queues_.size()); }
    QueuePairCapabilities capabilities(uint16_t) override { return {.buffer_lender = this}; }
    bool queue_ready(uint16_t) const override { return true; }
    WaitSpec receive_wait(uint16_t) const override { return {}; }
    WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t q) override { return queues_[q].counters; }
    packet::QueueCounters& tx_counters(uint16_t q) override { return queues_[q].counters; }

    bool next_rx_buffer(uint16_t q, uint32_t max_packet, std::span<const iovec>* out) override {
        Queue& s = queues_[q];
        if (s.posted == 0 || max_packet > kBuffer) {
            return false;
        }
        s.lent[0] = iovec{s.buffers[0].data(), kBuffer};
        *out = {s.lent.data(), 1};
        return true;
    }
    void commit_rx_buffer(uint16_t q, uint32_t len) override { take(q, 0, len); }
    void flush_rx_buffers(uint16_t) override {}
    uint16_t lend_rx_buffers(uint16_t q, uint32_t max_packet, uint16_t max,
                             packet::PacketBurst& out) override {
        Queue& s = queues_[q];
        const auto n = static_cast<uint16_t>(std::min<uint32_t>(max, s.posted));
        if (max_packet > kBuffer) {
            return 0;
        }
        for (uint16_t i = 0; i < n; ++i) {
            out.free_iovecs()[0] = iovec{s.buffers[i].data(), kBuffer};
            out.push(1, kBuffer, i);
        }
        return n;
    }
    void commit_rx_buffers(uint16_t q, std::span<const int> lengths) override {
        for (size_t i = 0; i < lengths.size(); ++i) {
            take(q, i, static_cast<uint32_t>(lengths[i]));
        }
    }

    void post(uint16_t q, uint32_t n) { queues_[q].posted += n; }
    const Receipt& receipt() const { return receipt_; }
    uint32_t frames(uint16_t q) const { return queues_[q].frames; }
    // The queue each flow arrived on: a flow must stay on one tap queue.
    std::map<uint16_t, uint16_t> flow_queue;

private:
    struct Queue {
        std::array<std::vector<uint8_t>, packet::kMaxBurstPackets> buffers;
        std::array<iovec, 1> lent{};
        uint32_t posted = 0;
        uint32_t frames = 0;
        packet::QueueCounters counters;
        Queue() {
            for (auto& b : buffers) {
                b.resize(kBuffer);
            }
        }
    };
    void take(uint16_t q, size_t buffer, uint32_t len) {
        Queue& s = queues_[q];
        ASSERT_GT(s.posted, 0u) << "a buffer committed that was never posted";
        --s.posted;
        const uint8_t* data = s.buffers[buffer].data();
        if (receipt_.take(data, len)) {
            ++s.frames;
            const std::optional<FrameId> id = testing::tap_frame_id(data + kHeader, len - kHeader);
            auto [it, fresh] = flow_queue.emplace(id->flow, q);
            EXPECT_EQ(it->second, q) << "flow " << id->flow << " moved between tap queues";
        }
    }
    std::vector<Queue> queues_;
    Receipt receipt_;
};

TEST(TapToGuestMultiqueue, each_queue_pair_reads_its_own_tap_queue_in_order_per_flow) {
    if (!can_make_taps()) {
        GTEST_SKIP() << "needs root and /dev/net/tun";
    }
    constexpr uint16_t kQueues = 4;
    const Traffic t{TapFrameKind::udp, 64, 16, 200};
    TapPort tap("tap", tap_options(kQueues));
    quiet_and_up(tap);
    ASSERT_EQ(tap.queue_count(), kQueues);
    for (uint16_t q = 1; q < kQueues; ++q) {
        tap.set_queue_attached(q, true);
    }
    FakeGuestRx guest(kQueues, t);
    std::vector<std::unique_ptr<dataplane::ForwardPath>> paths;
    for (uint16_t q = 0; q < kQueues; ++q) {
        paths.push_back(
            std::make_unique<dataplane::ForwardPath>(tap, q, guest, q, ports::QueuePairOptions{}));
        ASSERT_EQ(paths.back()->style(), dataplane::ForwardPath::Style::fill);
    }
    inject(tap.device().name(), t);
    // The guest posts a few buffers at a time, as a slow one would: every
    // path keeps stopping at a full guest and going on from there.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (guest.receipt().ours() < t.total() && std::chrono::steady_clock::now() < deadline) {
        for (uint16_t q = 0; q < kQueues; ++q) {
            guest.post(q, 37);
            paths[q]->run_turn(0);
        }
    }
    guest.receipt().expect_complete();
    uint16_t queues_used = 0;
    for (uint16_t q = 0; q < kQueues; ++q) {
        queues_used += guest.frames(q) != 0 ? 1 : 0;
        EXPECT_EQ(tap.rx_counters(q).total_drops(), 0u);
    }
    // 16 flows over 4 queues by tun's flow hash: all on one would be a
    // 4^-15 chance, or a tap that does not steer.
    EXPECT_GT(queues_used, 1u);
    EXPECT_EQ(link_stat(tap.device().name(), "tx_dropped"), 0u);
}

}  // namespace
}  // namespace vnet::ports
