// A fault in any mapping vnetd holds for a front end (its memory regions,
// the dirty log, the inflight buffer) stops the queue pair that touched it
// and reports the true reason, naming the mapping, so the device breaks;
// another port goes on. The turns run guarded, as the worker runs them
// (run_guarded, then ForwardPath::on_guest_fault). Memory is shrunk the way
// a front end does it (ftruncate); the log and the inflight buffer must be
// sealed against that, so the test loses their pages behind the device's
// back instead (an empty file mapped over them: the next access faults).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "common/guest_fault.hpp"
#include "dataplane/forward_path.hpp"
#include "unit/dataplane/fake_ports.hpp"
#include "unit/ports/vhost_user/guest_rx_harness.hpp"
#include "virtio/log/dirty_log.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using vhost_user::Request;
using vhost_user::test::RequestBuilder;
using Reports = std::vector<std::pair<uint32_t, std::string>>;

constexpr char kMemoryFault[] =
    "guest memory: access faulted (SIGBUS): the front end shrank a memory region";
constexpr char kLogFault[] = "dirty log: access faulted (SIGBUS): the front end shrank the log";
constexpr char kInflightFault[] =
    "inflight region: access faulted (SIGBUS): the front end shrank the inflight buffer";

auto inline_owner() {
    return [](uint16_t, const std::function<void()>& work) { work(); };
}

// A VM port whose ring errors are recorded, with a path from its TX ring to
// a sink, as a worker would run it.
struct FaultingGuest {
    explicit FaultingGuest(bool ring_enable = false)
        : guest(inline_owner(), GuestRxHarness::kRingSize, ring_enable) {
        guest.port.set_ring_error_handler(
            [this](uint32_t ring, std::string reason) { reports.emplace_back(ring, reason); });
    }
    // One worker turn, guarded; a fault goes where the worker sends it.
    // Returns false if the turn faulted.
    bool run_turn() {
        uintptr_t fault_address = 0;
        if (run_guarded([&] { path.run_turn(0); }, &fault_address)) {
            return true;
        }
        path.on_guest_fault(fault_address);
        return false;
    }

    GuestRxHarness guest;
    dataplane::testing::FakeSink sink;
    dataplane::ForwardPath path{guest.port, 0, sink, 0, ports::QueuePairOptions{}};
    Reports reports;
};

// What the front end's truncation does to our mapping: the pages at `at`
// are backed by an empty file from now on, so touching them is SIGBUS.
void lose_pages(const void* at, size_t len) {
    UniqueFd empty = vhost_user::test::make_memfd(0);
    void* p = ::mmap(const_cast<void*>(at), len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                     empty.get(), 0);
    ASSERT_EQ(p, at);
}

// Another guest on its own memory, moving one frame through its own path.
void expect_other_port_moves() {
    FaultingGuest other;
    other.guest.post_tx_chain(1, 80);
    EXPECT_TRUE(other.run_turn());
    EXPECT_EQ(other.sink.received.size(), 1u);
    EXPECT_EQ(other.guest.used_idx(1), 1);
    EXPECT_TRUE(other.reports.empty());
}

void expect_pair_stopped(VhostUserPort& port) {
    EXPECT_FALSE(port.queue_ready(0));
    EXPECT_FALSE(port.ring_view(0).running);
    EXPECT_FALSE(port.ring_view(1).running);
}

TEST(VhostUserPortFault, a_memory_region_shrunk_under_traffic_stops_the_pair_naming_guest_memory) {
    install_guest_fault_handler();
    FaultingGuest g;
    g.guest.post_tx_chain(1, 80);
    ASSERT_TRUE(g.run_turn());
    g.guest.post_tx_chain(1, 80);
    ASSERT_EQ(::ftruncate(g.guest.mem.fd.get(), 0), 0);  // the front end shrinks its memory

    EXPECT_FALSE(g.run_turn());
    EXPECT_EQ(g.reports, (Reports{{0, kMemoryFault}, {1, kMemoryFault}}));
    expect_pair_stopped(g.guest.port);
    EXPECT_TRUE(g.run_turn()) << "a stopped pair is not touched again";
    EXPECT_EQ(g.reports.size(), 2u);
    expect_other_port_moves();
}

TEST(VhostUserPortFault, a_dirty_log_lost_while_logging_stops_the_pair_naming_the_log) {
    install_guest_fault_handler();
    FaultingGuest g(/*ring_enable=*/true);
    UniqueFd log_fd = vhost_user::test::make_sealed_memfd(4096);
    g.guest.send(
        RequestBuilder(Request::set_protocol_features)
            .payload(
                vhost_user::ProtocolFeatureSet{vhost_user::ProtocolFeature::log_shmfd}.bits()));
    g.guest.send(
        RequestBuilder(Request::set_log_base).payload(vhost_user::LogBase{32, 0}).fd(log_fd.get()));
    g.guest.send(
        RequestBuilder(Request::set_features)
            .payload(
                g.guest.device->negotiated_features().with(virtio::Feature::vhost_log_all).bits()));
    ASSERT_TRUE(g.guest.device->logging());
    ASSERT_TRUE(g.guest.port.queue_ready(0));
    lose_pages(g.guest.device->dirty_log()->bitmap(), 4096);

    // The frame leaves; marking the used ring it completes to faults.
    g.guest.post_tx_chain(1, 80);
    EXPECT_FALSE(g.run_turn());
    EXPECT_EQ(g.reports, (Reports{{0, kLogFault}, {1, kLogFault}}))
        << "both rings: neither may write the guest without marking it";
    expect_pair_stopped(g.guest.port);

    // Nothing later turns the lost log into a ring-index error.
    g.guest.post_tx_chain(1, 80);
    EXPECT_TRUE(g.run_turn());
    EXPECT_EQ(g.reports.size(), 2u);
    expect_other_port_moves();
}

TEST(VhostUserPortFault, an_inflight_buffer_lost_stops_the_pair_naming_the_inflight_region) {
    install_guest_fault_handler();
    FaultingGuest g(/*ring_enable=*/true);
    g.guest.send(
        RequestBuilder(Request::set_protocol_features)
            .payload(vhost_user::ProtocolFeatureSet{vhost_user::ProtocolFeature::inflight_shmfd}
                         .bits()));
    // As a front end does it: the rings stop, the buffer comes, they start over it.
    for (uint32_t q : {0u, 1u}) {
        g.guest.send(RequestBuilder(Request::get_vring_base).payload(vhost_user::VringState{q, 0}));
    }
    vhost_user::Message reply;
    RequestBuilder get(Request::get_inflight_fd);
    get.payload(vhost_user::InflightDescription{0, 0, 2, GuestRxHarness::kRingSize, 0});
    ASSERT_EQ(g.guest.device->handle_message(*get.msg, reply).error, vhost_user::MessageError::ok);
    vhost_user::InflightDescription given{};
    reply.read_payload(given);
    for (uint32_t q : {0u, 1u}) {
        g.guest.start_ring(q);
        g.guest.set_ring_enabled(q, true);
    }
    const vhost_user::QueueSnapshot s = g.guest.device->queue_snapshot(1);
    ASSERT_TRUE(std::get<virtio::SplitDeviceRing>(s.ring).inflight().active());
    ASSERT_TRUE(g.guest.port.queue_ready(0));
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    lose_pages(s.inflight_mapping.base, (given.mmap_size + page - 1) / page * page);

    // Taking the chain marks it in flight: that write faults.
    g.guest.post_tx_chain(1, 80);
    EXPECT_FALSE(g.run_turn());
    EXPECT_EQ(g.reports, (Reports{{0, kInflightFault}, {1, kInflightFault}}));
    expect_pair_stopped(g.guest.port);
    expect_other_port_moves();
}

}  // namespace
}  // namespace vnet::ports
