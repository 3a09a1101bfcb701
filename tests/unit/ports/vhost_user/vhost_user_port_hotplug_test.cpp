// Memory hotplug under a running worker (QEMU pc-dimm device_add/device_del:
// ADD_MEM_REG / REM_MEM_REG): packets in the new region travel, a removed
// region is unmapped only after the worker that still translates through
// the old map has finished its turn, and a chain that points into a removed
// region afterwards is a guest fault: counted, never dereferenced.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "unit/ports/vhost_user/guest_rx_harness.hpp"
#include "vhost_user/memory_region.hpp"

namespace vnet::ports {
namespace {

using test::GuestRxHarness;
using vhost_user::Request;
using vhost_user::SingleMemoryRegion;
using vhost_user::test::kNeedReply;
using vhost_user::test::RequestBuilder;

uint64_t drops(packet::QueueCounters& c, packet::DropReason r) {
    return c.drops[static_cast<size_t>(r)].get();
}

// The owning worker, as far as the port can tell: one thread that runs what
// it is given in order, so a control-thread command (run_sync) waits for the
// turn in progress, exactly as dataplane::Worker runs commands between rounds.
class OwnerThread {
public:
    OwnerThread() : thread_([this] { loop(); }) {}
    ~OwnerThread() {
        post([this] { done_ = true; });
        thread_.join();
    }
    void post(std::function<void()> work) {
        std::lock_guard<std::mutex> lock(mutex_);
        work_.push_back(std::move(work));
        cv_.notify_all();
    }
    // VhostUserPort::RunOnOwner: returns once `work` ran on this thread.
    void run_sync(const std::function<void()>& work) {
        std::promise<void> ran;
        post([&] {
            work();
            ran.set_value();
        });
        ran.get_future().wait();
    }

private:
    void loop() {
        while (!done_) {
            std::function<void()> work;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                cv_.wait(lock, [this] { return !work_.empty(); });
                work = std::move(work_.front());
                work_.pop_front();
            }
            work();
        }
    }
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> work_;
    bool done_ = false;
    std::thread thread_;
};

// A hotplugged DIMM: its own memfd at a guest address above the boot memory.
struct Dimm {
    static constexpr uint64_t kSize = 0x10000;
    static constexpr uint64_t kGpa = 0x100000;  // right after GuestMemory's 1 MiB
    static constexpr uint64_t kUva = 0x7f1000000000;
    UniqueFd fd = vhost_user::test::make_memfd(kSize);
    uint8_t* host = static_cast<uint8_t*>(
        ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
    ~Dimm() { ::munmap(host, kSize); }
    SingleMemoryRegion region() const { return {0, {kGpa, kSize, kUva, 0}}; }
};

class VhostUserPortHotplug : public ::testing::Test {
protected:
    // QEMU sends ADD/REM_MEM_REG only with CONFIGURE_MEM_SLOTS negotiated
    // (which needs PROTOCOL_FEATURES: the rings then run once enabled).
    void SetUp() override {
        guest.send(RequestBuilder(Request::set_protocol_features)
                       .payload(uint64_t{1} << static_cast<unsigned>(
                                    vhost_user::ProtocolFeature::configure_mem_slots)));
        ASSERT_TRUE(guest.port.queue_ready(0));
    }
    vhost_user::DispatchResult add(const Dimm& d) {
        return guest.send(
            RequestBuilder(Request::add_mem_reg, kNeedReply).payload(d.region()).fd(d.fd.get()));
    }
    vhost_user::DispatchResult remove(const Dimm& d) {
        return guest.send(RequestBuilder(Request::rem_mem_reg, kNeedReply).payload(d.region()));
    }

    OwnerThread owner;
    GuestRxHarness guest{
        [this](uint16_t, const std::function<void()>& work) { owner.run_sync(work); },
        GuestRxHarness::kRingSize, /*ring_enable=*/true};
};

TEST_F(VhostUserPortHotplug, a_packet_in_a_hotplugged_region_is_taken_from_its_new_mapping) {
    Dimm dimm;
    const int64_t before = vhost_user::live_memory_mappings();
    ASSERT_EQ(add(dimm).error, vhost_user::MessageError::ok);
    EXPECT_EQ(vhost_user::live_memory_mappings(), before + 1);
    ASSERT_EQ(guest.device->memory()->region_count(), 2u);
    ASSERT_TRUE(guest.port.queue_ready(0)) << "the rings restarted on the new map";
    std::memset(dimm.host, 0x5a, 96);
    guest.post_tx_chain(1, 96, Dimm::kGpa);

    uint8_t seen[96] = {};
    uint16_t taken = 0;
    owner.run_sync([&] {
        packet::PacketBurst burst;
        taken = guest.port.receive_burst(0, burst, packet::kMaxBurstPackets);
        if (taken == 1) {
            std::memcpy(seen, burst.iovecs[0].iov_base, sizeof seen);
            guest.port.complete_burst(0, burst, 1);
        }
    });
    ASSERT_EQ(taken, 1);
    EXPECT_EQ(std::vector<uint8_t>(seen, seen + 96), std::vector<uint8_t>(96, 0x5a));
    EXPECT_EQ(guest.used_idx(1), 1);
    EXPECT_EQ(guest.port.rx_counters(0).packets.get(), 1u);
}

TEST_F(VhostUserPortHotplug, rem_mem_reg_waits_for_the_workers_turn_before_unmapping_the_region) {
    Dimm dimm;
    ASSERT_EQ(add(dimm).error, vhost_user::MessageError::ok);
    const int64_t with_dimm = vhost_user::live_memory_mappings();
    std::memset(dimm.host, 0xa5, 128);
    guest.post_tx_chain(1, 128, Dimm::kGpa);

    // A turn that took a packet from the DIMM and is still sending it (a
    // destination writing its iovecs) when the front end removes the DIMM.
    std::promise<void> in_turn;
    std::promise<void> may_finish;
    auto finish = may_finish.get_future().share();
    std::vector<uint8_t> sent;
    uint16_t taken = 0;
    owner.post([&] {
        packet::PacketBurst burst;
        taken = guest.port.receive_burst(0, burst, packet::kMaxBurstPackets);
        in_turn.set_value();
        finish.wait();
        if (taken == 1) {  // reads the DIMM after REM_MEM_REG arrived
            const auto* p = static_cast<const uint8_t*>(burst.iovecs[0].iov_base);
            sent.assign(p, p + burst.iovecs[0].iov_len);
            guest.port.complete_burst(0, burst, 1);
        }
    });
    in_turn.get_future().wait();
    auto removal = std::async(std::launch::async, [&] { return remove(dimm); });

    EXPECT_EQ(removal.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
        << "REM_MEM_REG must wait for the turn";
    EXPECT_EQ(vhost_user::live_memory_mappings(), with_dimm) << "still mapped mid-turn";
    may_finish.set_value();
    const vhost_user::DispatchResult r = removal.get();

    EXPECT_EQ(r.error, vhost_user::MessageError::ok);
    EXPECT_EQ(vhost_user::live_memory_mappings(), with_dimm - 1) << "unmapped after the turn";
    ASSERT_EQ(taken, 1);
    EXPECT_EQ(sent, std::vector<uint8_t>(128, 0xa5));
    EXPECT_EQ(guest.used_idx(1), 1) << "the turn completed its packet before the ring stopped";
    EXPECT_EQ(guest.device->memory()->region_count(), 1u);
    EXPECT_TRUE(guest.port.queue_ready(0)) << "the rings run on without the DIMM";
}

TEST_F(VhostUserPortHotplug, a_chain_into_a_removed_region_is_a_guest_fault_counted_not_read) {
    Dimm dimm;
    ASSERT_EQ(add(dimm).error, vhost_user::MessageError::ok);
    ASSERT_EQ(remove(dimm).error, vhost_user::MessageError::ok);
    std::vector<std::string> faults;
    guest.port.set_ring_error_handler([&](uint32_t ring, std::string reason) {
        faults.push_back(std::to_string(ring) + " " + reason);
    });
    guest.post_tx_chain(1, 64, Dimm::kGpa);  // the guest still uses the DIMM

    uint16_t taken = 0;
    owner.run_sync([&] {
        packet::PacketBurst burst;
        taken = guest.port.receive_burst(0, burst, packet::kMaxBurstPackets);
    });

    EXPECT_EQ(taken, 0);
    packet::QueueCounters& out = guest.port.rx_counters(0);
    EXPECT_EQ(drops(out, packet::DropReason::bad_descriptor_chain), 1u);
    EXPECT_EQ(out.packets.get(), 0u);
    EXPECT_EQ(guest.used_idx(1), 0) << "a broken ring gets no used entry";
    EXPECT_FALSE(guest.port.queue_ready(0));
    EXPECT_EQ(faults,
              std::vector<std::string>{"1 TX descriptor chain: buffer not inside guest memory"});
}

}  // namespace
}  // namespace vnet::ports
