// A VhostUserPort behind a real VhostUserDevice, with the test playing the
// guest: it posts RX buffers into a memfd both sides map, reads used->idx
// and counts the calls the port sends on the RX ring's call eventfd. For
// tests that assert exact used-index values and notify counts.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "ports/vhost_user_port.hpp"
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
        uint16_t tx_ring_size = kRingSize, bool ring_enable = false)
        : port("vm", 1, std::move(run_on_owner)), tx_ring_size_(tx_ring_size) {
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
        start_ring(0);
        start_ring(1);
        send(vhost_user::test::RequestBuilder(vhost_user::Request::set_vring_call)
                 .payload(uint64_t{0})
                 .fd(call.get()));
        if (ring_enable) {
            set_ring_enabled(0, true);
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
    // (0: RX, 1: TX; the port serves queue pair 0 only with both running).
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

    // Guest side of the RX ring (ring 0), virtio 1.2 §2.7.13.
    void post_rx_buffers(uint16_t n) {
        for (uint16_t i = 0; i < n; ++i) {
            const uint16_t head = static_cast<uint16_t>(next_avail_ % kRingSize);
            virtio::VirtqDesc d{kBuffersGpa + uint64_t{head} * kBufferSize, kBufferSize,
                                virtio::VirtqDesc::kFlagWrite, 0};
            std::memcpy(guest(mem.desc_uva(0)) + 16u * head, &d, sizeof d);
            auto* avail = reinterpret_cast<virtio::VirtqAvail*>(guest(mem.avail_uva(0)));
            avail->ring[next_avail_ % kRingSize] = head;
            ++next_avail_;
        }
        auto* avail = reinterpret_cast<virtio::VirtqAvail*>(guest(mem.avail_uva(0)));
        std::atomic_ref<uint16_t>(avail->idx).store(next_avail_, std::memory_order_release);
    }
    uint16_t used_idx(uint32_t q = 0) {
        auto* used = reinterpret_cast<virtio::VirtqUsed*>(guest(mem.used_uva(q)));
        return std::atomic_ref<uint16_t>(used->idx).load(std::memory_order_acquire);
    }
    uint32_t used_len(uint32_t q, uint16_t slot) {
        auto* used = reinterpret_cast<virtio::VirtqUsed*>(guest(mem.used_uva(q)));
        return used->ring[slot].len;
    }

    // Guest side of the TX ring (ring 1): one chain of direct descriptors
    // of `segment_bytes` each, made available at once. Returns its head.
    uint16_t post_tx_chain(uint16_t segments, uint32_t segment_bytes) {
        const uint16_t head = next_tx_desc_;
        for (uint16_t i = 0; i < segments; ++i) {
            const auto slot = static_cast<uint16_t>((head + i) % tx_ring_size_);
            const bool last = i + 1 == segments;
            virtio::VirtqDesc d{kTxBuffersGpa, segment_bytes,
                                last ? uint16_t{0} : virtio::VirtqDesc::kFlagNext,
                                static_cast<uint16_t>((slot + 1) % tx_ring_size_)};
            std::memcpy(guest(mem.desc_uva(1)) + 16u * slot, &d, sizeof d);
        }
        next_tx_desc_ = static_cast<uint16_t>((head + segments) % tx_ring_size_);
        auto* avail = reinterpret_cast<virtio::VirtqAvail*>(guest(mem.avail_uva(1)));
        avail->ring[next_tx_avail_ % tx_ring_size_] = head;
        ++next_tx_avail_;
        std::atomic_ref<uint16_t>(avail->idx).store(next_tx_avail_, std::memory_order_release);
        return head;
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

    uint16_t tx_ring_size_;
    uint16_t next_avail_ = 0;
    uint16_t next_tx_desc_ = 0;
    uint16_t next_tx_avail_ = 0;
    uint64_t notified_ = 0;
};

}  // namespace vnet::ports::test
