// A VhostUserPort behind a real VhostUserDevice, with the test playing the
// guest: it posts RX buffers and TX chains into a memfd both sides map
// through the driver side's own split rings (frontend::DriverSplitRing),
// reads used->idx and counts the calls the port sends on the RX ring's call
// eventfd. For tests that assert exact used-index values and notify counts.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "frontend/driver_split_ring.hpp"
#include "frontend/raw_split_ring_writer.hpp"
#include "ports/vhost_user/vhost_user_port.hpp"
#include "unit/dataplane/fake_ports.hpp"
#include "unit/vhost_user/device_harness.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports::test {

// A fill source (a tap stand-in) whose readiness is a real eventfd, so a
// worker can sleep on it without registering someone else's fd.
class WakeableFillSource : public dataplane::testing::FakeFillSource {
public:
    WakeableFillSource() : wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
    WaitSpec receive_wait(uint16_t) const override { return {wake_.get(), 1, true}; }
    void wake() const {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
    }
    // A frame as a tap with a 12-byte vnet header reads it.
    void queue_frames(size_t n) {
        for (size_t i = 0; i < n; ++i) {
            std::vector<uint8_t> f(sizeof(virtio::NetHeader) + 60, 0);
            f.back() = static_cast<uint8_t>(i);
            frames.push_back(std::move(f));
        }
    }

private:
    UniqueFd wake_;
};

class GuestRxHarness {
public:
    static constexpr uint16_t kRingSize = 64;
    // The TX ring may be larger: a chain longer than one write takes
    // (UIO_MAXIOV segments) needs more descriptors than 64.
    static constexpr uint16_t kMaxTxRingSize = 2048;
    static constexpr uint32_t kBufferSize = 2048;
    static constexpr uint64_t kBuffersGpa = 0x80000;    // 64 x 2 KiB, inside the 1 MiB region
    static constexpr uint64_t kTxBuffersGpa = 0xa0000;  // TX payload bytes, up to 0xfffff

    using RunOnOwner = VhostUserPort::RunOnOwner;

    // `run_on_owner` as the daemon passes it (a worker's run_sync), or
    // inline when the test itself is the owning thread.
    explicit GuestRxHarness(
        RunOnOwner run_on_owner = [](uint16_t, const std::function<void()>& work) { work(); },
        uint16_t tx_ring_size = kRingSize, bool ring_enable = false, bool start_rx_ring = true)
        : port("vm", 1, std::move(run_on_owner)), tx_ring_size_(tx_ring_size) {
        for (uint32_t q : {0u, 1u}) {
            rings_[q].emplace(ring_layout(q), false);
        }
        vhost_user::DeviceConfig config;
        config.name = "rx-coalescing";
        // No EVENT_IDX: every publish wants a call, so calls count publishes.
        // With ring_enable, PROTOCOL_FEATURES too: rings then run only after
        // SET_VRING_ENABLE 1, and set_ring_enabled() can turn them off.
        config.features = virtio::FeatureSet{virtio::Feature::version_1};
        if (ring_enable) {
            config.features = config.features.with(virtio::Feature::vhost_user_protocol_features);
        }
        device = std::make_unique<vhost_user::VhostUserDevice>(config, &port);
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_features)
                 .payload(config.features.bits()));
        vhost_user::MemoryTable t{};
        t.nregions = 1;
        t.regions[0] = mem.region();
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_mem_table)
                 .payload(t)
                 .size(vhost_user::memory_table_payload_size(1))
                 .fd(mem.fd.get()));
        if (start_rx_ring) {
            start_ring(0);
        }
        start_ring(1);
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_call)
                 .payload(uint64_t{0})
                 .fd(call.get()));
        if (ring_enable) {
            if (start_rx_ring) {
                set_ring_enabled(0, true);
            }
            set_ring_enabled(1, true);
        }
    }

    // SET_VRING_ENABLE, as QEMU sends it when the guest changes ethtool -L.
    void set_ring_enabled(uint32_t q, bool enabled) {
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_enable)
                 .payload(vhost_user::VringState{q, enabled ? 1u : 0u}));
    }

    ~GuestRxHarness() { device.reset(); }  // stops the rings through the port first

    vhost_user::DispatchResult send(vhost_user::test::RequestBuilder& r) {
        vhost_user::Message reply;
        return device->handle_message(*r.msg, reply);
    }
    vhost_user::DispatchResult send(vhost_user::test::RequestBuilder&& r) { return send(r); }

    // NUM, BASE, ADDR, KICK: what a front end sends to (re)start ring `q`
    // (0: RX, 1: TX; each is served once it runs, whether or not the other does).
    void start_ring(uint32_t q, uint32_t base = 0) {
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_num)
                 .payload(vhost_user::VringState{q, q == 1 ? tx_ring_size_ : kRingSize}));
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_base)
                 .payload(vhost_user::VringState{q, base}));
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_addr)
                 .payload(vhost_user::VringAddr{q, 0, mem.desc_uva(q), mem.used_uva(q),
                                                mem.avail_uva(q), 0}));
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_kick)
                 .payload(uint64_t{q})
                 .fd(kick.get()));
    }
    // GET_VRING_BASE on the RX ring: what a front end does to stop it.
    void stop_rx_ring() {
        send(vhost_user::test::RequestBuilder(vhost_user::Request::get_vring_base)
                 .payload(vhost_user::VringState{0, 0}));
    }

    // Guest side of the RX ring (ring 0): n writable buffers of kBufferSize,
    // published at once. Nothing is reclaimed, so at most kRingSize in all.
    void post_rx_buffers(uint16_t n) {
        frontend::DriverSplitRing& rx = *rings_[0];
        for (uint16_t i = 0; i < n; ++i) {
            const uint32_t buffer = rx_posted_++;
            if (!rx.add_buffer(kBuffersGpa + uint64_t{buffer} * kBufferSize, kBufferSize,
                               frontend::BufferAccess::device_writes, buffer)) {
                throw std::runtime_error("GuestRxHarness: more than kRingSize RX buffers posted");
            }
        }
        rx.publish();
    }
    uint16_t used_idx(uint32_t q = 0) {
        return frontend::RawSplitRingWriter(ring_layout(q)).used_idx();
    }
    uint32_t used_len(uint32_t q, uint16_t slot) {
        return frontend::RawSplitRingWriter(ring_layout(q)).used_elem(slot).len;
    }

    // Guest side of the TX ring (ring 1): one chain of direct descriptors
    // of `segment_bytes` each (all over the same payload bytes at `gpa`),
    // published.
    void post_tx_chain(uint16_t segments, uint32_t segment_bytes, uint64_t gpa = kTxBuffersGpa) {
        const std::vector<frontend::BufferSegment> chain(
            segments,
            frontend::BufferSegment{gpa, segment_bytes, frontend::BufferAccess::device_reads});
        if (!rings_[1]->add_chain(chain, tx_posted_++)) {
            throw std::runtime_error("GuestRxHarness: TX ring has no room for the chain");
        }
        rings_[1]->publish();
    }
    // Calls received on the RX ring so far.
    uint64_t notifies() {
        uint64_t value = 0;
        if (::read(call.get(), &value, sizeof value) == sizeof value) {
            notified_ += value;
        }
        return notified_;
    }

    vhost_user::test::GuestMemory mem;
    UniqueFd kick{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    UniqueFd call{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    VhostUserPort port;
    std::unique_ptr<vhost_user::VhostUserDevice> device;

private:
    uint8_t* guest(uint64_t uva) { return mem.host + (uva - mem.kUva); }
    // Ring q where start_ring tells the device it is (GuestMemory's areas).
    frontend::DriverRingLayout ring_layout(uint32_t q) {
        return frontend::DriverRingLayout{
            reinterpret_cast<virtio::VirtqDesc*>(guest(mem.desc_uva(q))),
            reinterpret_cast<virtio::VirtqAvail*>(guest(mem.avail_uva(q))),
            reinterpret_cast<virtio::VirtqUsed*>(guest(mem.used_uva(q))),
            q == 1 ? tx_ring_size_ : kRingSize};
    }

    uint16_t tx_ring_size_;
    std::optional<frontend::DriverSplitRing> rings_[2];
    uint32_t rx_posted_ = 0;
    uint32_t tx_posted_ = 0;
    uint64_t notified_ = 0;
};

}  // namespace vnet::ports::test
