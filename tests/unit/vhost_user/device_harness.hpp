// A front end in a test: builds requests, feeds them to a VhostUserDevice and
// records what the dataplane observer was told. Guest memory is one memfd
// that the test maps too, so it can play the guest (write used->idx...).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "unit/vhost_user/test_support.hpp"
#include "vhost_user/device.hpp"
#include "vhost_user/request_table.hpp"

namespace vnet::vhost_user::test {

inline constexpr uint32_t kNeedReply = MessageHeader::kVersion | MessageHeader::kFlagNeedReply;

// The ring a snapshot carries, in the format the test negotiated.
inline const virtio::SplitDeviceRing& split_ring_of(const QueueSnapshot& s) {
    return std::get<virtio::SplitDeviceRing>(s.ring);
}
inline const virtio::PackedRing& packed_ring_of(const QueueSnapshot& s) {
    return std::get<virtio::PackedRing>(s.ring);
}

struct RequestBuilder {
    std::unique_ptr<Message> msg = std::make_unique<Message>();

    explicit RequestBuilder(Request r, uint32_t flags = MessageHeader::kVersion) {
        msg->header = {static_cast<uint32_t>(r), flags, 0};
    }
    template <class T>
    RequestBuilder& payload(const T& value) {
        msg->write_payload(value);
        return *this;
    }
    RequestBuilder& size(uint32_t s) {
        msg->header.size = s;
        return *this;
    }
    // Attaches a duplicate of `fd` (the message owns and closes its copy).
    RequestBuilder& fd(int raw) {
        msg->fds[msg->fd_count++] = UniqueFd(::fcntl(raw, F_DUPFD_CLOEXEC, 0));
        return *this;
    }
};

struct ObserverEvent {
    enum Kind { ready, stopped, call_changed, rarp } kind;
    uint32_t queue;
    int fd = -1;
};

class RecordingObserver : public QueueObserver {
public:
    void on_queue_ready(VhostUserDevice& device, uint32_t q) override {
        events.push_back({ObserverEvent::ready, q});
        snapshots.push_back(device.queue_snapshot(q));
    }
    uint32_t on_queue_stopped(VhostUserDevice&, uint32_t q) override {
        events.push_back({ObserverEvent::stopped, q});
        if (stop_index_override >= 0) {
            return static_cast<uint32_t>(stop_index_override);
        }
        const QueueSnapshot s = last_snapshot(q);
        return s.vring_base;
    }
    void on_call_fd_changed(VhostUserDevice&, uint32_t q, int fd) override {
        events.push_back({ObserverEvent::call_changed, q, fd});
    }
    void on_rarp_requested(VhostUserDevice&, const MacAddress& m) override {
        events.push_back({ObserverEvent::rarp, 0});
        mac = m;
    }
    QueueSnapshot last_snapshot(uint32_t q) const {
        for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
            if (it->index == q) {
                return *it;
            }
        }
        return {};
    }
    size_t count(ObserverEvent::Kind k) const {
        size_t n = 0;
        for (const auto& e : events) {
            n += e.kind == k;
        }
        return n;
    }

    std::vector<ObserverEvent> events;
    std::vector<QueueSnapshot> snapshots;
    int64_t stop_index_override = -1;
    MacAddress mac{};
};

// One guest memory region backed by a memfd the test also maps.
struct GuestMemory {
    static constexpr uint64_t kSize = 1 << 20;
    static constexpr uint64_t kGpa = 0;
    static constexpr uint64_t kUva = 0x7f0000000000;

    UniqueFd fd = make_memfd(kSize);
    uint8_t* host = static_cast<uint8_t*>(
        ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));

    ~GuestMemory() { ::munmap(host, kSize); }

    MemoryRegionDesc region() const { return {kGpa, kSize, kUva, 0}; }
    // Ring areas for queue q, inside the region and aligned.
    uint64_t desc_uva(uint32_t q) const { return kUva + 0x10000 * (q + 1); }
    uint64_t avail_uva(uint32_t q) const { return desc_uva(q) + 0x8000; }
    uint64_t used_uva(uint32_t q) const { return desc_uva(q) + 0xa000; }
    void set_used_idx(uint32_t q, uint16_t idx) {
        std::memcpy(host + (used_uva(q) - kUva) + 2, &idx, 2);
    }
};

struct Reply {
    DispatchResult result;
    std::unique_ptr<Message> msg;

    uint64_t u64() const {
        uint64_t v = ~uint64_t{0};
        msg->read_payload(v);
        return v;
    }
};

inline DeviceConfig test_device_config(uint32_t pairs = 2) {
    DeviceConfig c;
    c.name = "test.sock";
    c.max_queue_pairs = pairs;
    return c;
}

class DeviceHarness {
public:
    explicit DeviceHarness(DeviceConfig config = test_device_config())
        : device(std::make_unique<VhostUserDevice>(std::move(config), &observer)) {}

    Reply send(RequestBuilder& r) {
        Reply out{{}, std::make_unique<Message>()};
        out.result = device->handle_message(*r.msg, *out.msg);
        return out;
    }
    Reply send(RequestBuilder&& r) { return send(r); }

    // GET/SET_FEATURES and protocol features as QEMU does: everything offered
    // but RING_PACKED (split rings), or with it (negotiate_packed), and but
    // LOG_ALL, which QEMU acks only while it migrates the guest.
    void negotiate(uint64_t protocol = kDefaultProtocolFeatures.bits()) {
        send(RequestBuilder(Request::set_protocol_features).payload(protocol));
        send(RequestBuilder(Request::set_features)
                 .payload(device->offered_features()
                              .without(virtio::Feature::ring_packed)
                              .without(virtio::Feature::vhost_log_all)
                              .bits()));
    }
    void negotiate_packed(uint64_t protocol = kDefaultProtocolFeatures.bits()) {
        send(RequestBuilder(Request::set_protocol_features).payload(protocol));
        send(RequestBuilder(Request::set_features)
                 .payload(
                     device->offered_features().without(virtio::Feature::vhost_log_all).bits()));
    }
    Reply set_mem_table(const GuestMemory& mem, uint32_t flags = MessageHeader::kVersion) {
        MemoryTable t{};
        t.nregions = 1;
        t.regions[0] = mem.region();
        return send(RequestBuilder(Request::set_mem_table, flags)
                        .payload(t)
                        .size(memory_table_payload_size(1))
                        .fd(mem.fd.get()));
    }
    Reply vring_num(uint32_t q, uint32_t num) {
        return send(RequestBuilder(Request::set_vring_num).payload(VringState{q, num}));
    }
    Reply vring_base(uint32_t q, uint32_t base) {
        return send(RequestBuilder(Request::set_vring_base).payload(VringState{q, base}));
    }
    Reply vring_addr(const GuestMemory& mem, uint32_t q) {
        VringAddr a{q, 0, mem.desc_uva(q), mem.used_uva(q), mem.avail_uva(q), 0};
        return send(RequestBuilder(Request::set_vring_addr).payload(a));
    }
    Reply vring_kick(uint32_t q) {
        return send(RequestBuilder(Request::set_vring_kick).payload(uint64_t{q}).fd(kick.get()));
    }
    Reply vring_enable(uint32_t q, uint32_t on = 1) {
        return send(RequestBuilder(Request::set_vring_enable).payload(VringState{q, on}));
    }
    // NUM, BASE, ADDR, KICK, ENABLE: what QEMU does per ring.
    void start_ring(const GuestMemory& mem, uint32_t q, uint32_t num = 256, uint32_t base = 0) {
        vring_num(q, num);
        vring_base(q, base);
        vring_addr(mem, q);
        vring_kick(q);
        vring_enable(q);
    }

    RecordingObserver observer;
    std::unique_ptr<VhostUserDevice> device;
    UniqueFd kick = make_eventfd();
};

}  // namespace vnet::vhost_user::test
