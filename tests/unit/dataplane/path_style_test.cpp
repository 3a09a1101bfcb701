// A path's style follows what its two queue pairs can do, never what kind of
// port they are: a port with a capability set of its own is forwarded
// without any change to dataplane/.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

#include "dataplane/forward_path.hpp"
#include "ports/null/null_port.hpp"
#include "unit/dataplane/fake_ports.hpp"

namespace vnet::dataplane {
namespace {

using Style = ForwardPath::Style;
using ports::QueuePairCapabilities;

// Plays every role, but each queue pair offers only the roles it is given:
// a stand-in for a port kind the dataplane has never heard of (AF_XDP's
// UMEM is a reader, a burst source and a lender at once).
class RolePlayingPort final : public ports::Port,
                              public ports::BurstSource,
                              public ports::BurstSink,
                              public ports::BufferLender,
                              public ports::Reader {
public:
    struct Roles {
        bool burst_source = false;
        bool burst_sink = false;
        bool buffer_lender = false;
        bool reader = false;
    };
    explicit RolePlayingPort(std::vector<Roles> roles)
        : Port("role-playing"), roles_(std::move(roles)) {}

    uint16_t queue_count() const override { return static_cast<uint16_t>(roles_.size()); }
    QueuePairCapabilities capabilities(uint16_t queue) override {
        const Roles& r = roles_[queue];
        return {.burst_source = r.burst_source ? this : nullptr,
                .burst_sink = r.burst_sink ? this : nullptr,
                .buffer_lender = r.buffer_lender ? this : nullptr,
                .reader = r.reader ? this : nullptr};
    }
    bool queue_ready(uint16_t) const override { return true; }

    // Source roles: both hand out the same queued frames.
    uint16_t receive_burst(uint16_t, packet::PacketBurst& burst, uint16_t max) override {
        uint16_t n = 0;
        while (n < max && !frames.empty() && !burst.full()) {
            held.push_back(std::move(frames.front()));
            frames.pop_front();
            burst.free_iovecs()[0] = iovec{held.back().data(), held.back().size()};
            burst.push(1, static_cast<uint32_t>(held.back().size()), 0);
            ++n;
        }
        return n;
    }
    void complete_burst(uint16_t, const packet::PacketBurst&, uint16_t done) override {
        completed += done;
    }
    int32_t receive_one(uint16_t, std::span<const iovec> buffer) override {
        if (frames.empty()) {
            return 0;
        }
        const std::vector<uint8_t> f = std::move(frames.front());
        frames.pop_front();
        const size_t n = std::min(buffer[0].iov_len, f.size());
        std::memcpy(buffer[0].iov_base, f.data(), n);
        ++reads;
        return static_cast<int32_t>(n);
    }
    uint32_t max_packet_size() const override { return 256; }

    // Destination roles.
    uint16_t transmit_burst(uint16_t, const packet::PacketBurst& burst) override {
        sunk += burst.count;
        return burst.count;
    }
    bool next_rx_buffer(uint16_t, uint32_t max_packet, std::span<const iovec>* out) override {
        lent_iov = iovec{lent.data(), std::min<size_t>(max_packet, lent.size())};
        *out = std::span<const iovec>(&lent_iov, 1);
        return true;
    }
    void commit_rx_buffer(uint16_t, uint32_t) override { ++filled; }
    void flush_rx_buffers(uint16_t) override { ++flushes; }

    ports::WaitSpec receive_wait(uint16_t) const override { return {}; }
    ports::WaitSpec transmit_wait(uint16_t) const override { return {}; }
    packet::QueueCounters& rx_counters(uint16_t) override { return rx; }
    packet::QueueCounters& tx_counters(uint16_t) override { return tx; }

    void queue_frames(size_t n) {
        for (size_t i = 0; i < n; ++i) {
            frames.emplace_back(60, static_cast<uint8_t>(i));
        }
    }

    std::deque<std::vector<uint8_t>> frames;
    std::deque<std::vector<uint8_t>> held;
    std::array<uint8_t, 256> lent{};
    iovec lent_iov{};
    size_t completed = 0, reads = 0, sunk = 0, filled = 0, flushes = 0;
    packet::QueueCounters rx, tx;

private:
    std::vector<Roles> roles_;
};

using Roles = RolePlayingPort::Roles;

// The capabilities of a queue pair playing `roles` (style_between only
// looks at which roles are there).
QueuePairCapabilities offering(Roles roles) {
    static RolePlayingPort every_role({{true, true, true, true}});
    QueuePairCapabilities all = every_role.capabilities(0);
    return {.burst_source = roles.burst_source ? all.burst_source : nullptr,
            .burst_sink = roles.burst_sink ? all.burst_sink : nullptr,
            .buffer_lender = roles.buffer_lender ? all.buffer_lender : nullptr,
            .reader = roles.reader ? all.reader : nullptr};
}

TEST(PathStyle, a_reader_feeding_a_lender_is_filled) {
    EXPECT_EQ(
        ForwardPath::style_between(offering({.reader = true}), offering({.buffer_lender = true})),
        Style::fill);
}

TEST(PathStyle, a_burst_source_feeding_a_burst_sink_is_pushed) {
    EXPECT_EQ(ForwardPath::style_between(offering({.burst_source = true}),
                                         offering({.burst_sink = true})),
              Style::push);
}

TEST(PathStyle, fill_wins_when_both_ways_are_open_so_the_read_lands_where_the_packet_stays) {
    // A tap (reader and burst source) feeding a guest (lender and sink).
    EXPECT_EQ(ForwardPath::style_between(offering({.burst_source = true, .reader = true}),
                                         offering({.burst_sink = true, .buffer_lender = true})),
              Style::fill);
}

TEST(PathStyle, a_reader_feeding_a_sink_that_lends_nothing_is_pushed_from_its_bursts) {
    // A tap feeding a tap: the source's staging slots, one submission per burst.
    EXPECT_EQ(ForwardPath::style_between(offering({.burst_source = true, .reader = true}),
                                         offering({.burst_sink = true})),
              Style::push);
}

TEST(PathStyle, no_style_when_the_source_produces_nothing_the_destination_takes) {
    // A discard port as a source: it only sinks and lends.
    EXPECT_EQ(ForwardPath::style_between(offering({.burst_sink = true, .buffer_lender = true}),
                                         offering({.burst_sink = true, .buffer_lender = true})),
              std::nullopt);
    // A reader with no lender and a burst source with no sink meet nowhere.
    EXPECT_EQ(
        ForwardPath::style_between(offering({.reader = true}), offering({.burst_sink = true})),
        std::nullopt);
    EXPECT_EQ(ForwardPath::style_between(offering({.burst_source = true}),
                                         offering({.buffer_lender = true})),
              std::nullopt);
}

TEST(PathStyle, building_a_path_out_of_a_port_that_produces_nothing_throws) {
    ports::NullPort null("sink");
    testing::FakeSink dst;
    EXPECT_THROW(ForwardPath(null, 0, dst, 0, ports::QueuePairOptions{}), std::invalid_argument);
}

TEST(PathStyle, each_queue_pair_is_forwarded_by_the_roles_it_offers) {
    // Queue pair 0 only reads, queue pair 1 only hands out bursts.
    RolePlayingPort src({{.reader = true}, {.burst_source = true}});
    RolePlayingPort dst(
        {{.burst_sink = true, .buffer_lender = true}, {.burst_sink = true, .buffer_lender = true}});
    ForwardPath reading(src, 0, dst, 0, ports::QueuePairOptions{.tx_batch = 8});
    ForwardPath bursting(src, 1, dst, 1, ports::QueuePairOptions{.tx_batch = 8});
    EXPECT_EQ(reading.style(), Style::fill);
    EXPECT_EQ(bursting.style(), Style::push);

    src.queue_frames(5);
    TurnResult filled = reading.run_turn(0);
    EXPECT_EQ(filled.packets, 5u);
    EXPECT_EQ(src.reads, 5u);
    EXPECT_EQ(dst.filled, 5u);
    EXPECT_EQ(dst.sunk, 0u);

    src.queue_frames(12);
    TurnResult pushed = bursting.run_turn(0);
    EXPECT_EQ(pushed.packets, 12u);
    EXPECT_EQ(dst.sunk, 12u);
    EXPECT_EQ(src.completed, 12u);
    EXPECT_EQ(src.reads, 5u);  // no reads on the pushed queue pair
}

TEST(PathStyle, a_port_playing_every_role_feeds_a_lender_by_filling_and_a_sink_by_pushing) {
    RolePlayingPort src(
        {{.burst_source = true, .burst_sink = true, .buffer_lender = true, .reader = true}});
    ports::NullPort lender("null");  // sink and lender
    testing::FakeSink sink;          // sink only
    EXPECT_EQ(ForwardPath(src, 0, lender, 0, ports::QueuePairOptions{}).style(), Style::fill);
    ForwardPath to_sink(src, 0, sink, 0, ports::QueuePairOptions{.tx_batch = 4});
    EXPECT_EQ(to_sink.style(), Style::push);
    src.queue_frames(6);
    EXPECT_EQ(to_sink.run_turn(0).packets, 6u);
    EXPECT_EQ(sink.burst_sizes, (std::vector<uint16_t>{4, 2}));
}

}  // namespace
}  // namespace vnet::dataplane
