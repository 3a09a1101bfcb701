// TapPort: a host tap device as a port. Queue pair q is tap queue q: with
// more than one, the tap is opened IFF_MULTI_QUEUE with one fd per queue, and
// each queue has its own writer, staging and counters, owned by the worker
// that owns the queue pair (no sharing between workers).
//
//  * destination, push style: a burst from a guest's TX ring is written with
//    one write per packet (tun takes exactly one per call), straight from
//    guest memory, vnet header and all, through io::BatchWriter (io_uring:
//    one submission per burst; or writev). EAGAIN/ENOBUFS: the rest of the
//    burst is kept by the path, which waits for EPOLLOUT. Other errors
//    (EINVAL for a header the kernel rejects) drop the packet, counted.
//  * source, fill style: each packet is read (readv) straight into the
//    destination's buffers, a guest's RX buffers.
//  * source, push style (tap -> tap, tap -> discard): a burst is read into
//    the port's own staging slots (one per packet, sized for the largest
//    frame) and handed out like a guest's TX burst, so the destination tap
//    writes it in one submission, after GRO. The one user-space copy of a
//    tap -> tap hop is this read; nothing copies it again.
//  * destination, fill style: the frame is read into a staging buffer and
//    written at commit (kept for ports that lend no buffers of their own).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "io/batch_writer.hpp"
#include "ports/port.hpp"
#include "ports/tap_device.hpp"

namespace vnet::ports {

struct TapPortOptions {
    TapOptions tap;
    io::BatchMode submit_mode = io::BatchMode::io_uring;
    // Tap queues (IFF_MULTI_QUEUE when more than one; at most 256, tun's
    // MAX_TAP_QUEUES). An existing single-queue tap of that name is served
    // with one queue (logged) rather than refused.
    uint16_t queues = 1;
};

class TapPort final : public Port {
public:
    TapPort(std::string name, const TapPortOptions& options);
    ~TapPort() override;

    PortKind kind() const override { return PortKind::tap; }
    uint16_t queue_count() const override { return static_cast<uint16_t>(queues_.size()); }
    bool queue_ready(uint16_t) const override { return true; }

    // Queue 0's device: the name, ifindex, flags and offloads of the tap.
    TapDevice& device() { return queues_[0]->tap; }
    const TapDevice& device() const { return queues_[0]->tap; }
    io::BatchMode submit_mode() const { return queues_[0]->writer.mode(); }

    // The guest at the other end negotiated `features`: let the kernel hand
    // us what it can digest (TUNSETOFFLOAD, QEMU's rule), and size reads.
    // Control thread; an ioctl, safe while the worker reads and writes.
    TunOffloads apply_guest_features(virtio::FeatureSet features);

    // Control thread: attach or detach tap queue `queue` as the guest's
    // queue pair of that number starts or stops, so that the kernel steers
    // frames only to queues someone reads. Queue 0 always stays attached
    // (a guest always runs queue pair 0). Call detach only once the worker
    // has let go of the queue pair, attach before it starts.
    void set_queue_attached(uint16_t queue, bool attached);
    bool queue_attached(uint16_t queue) const { return queues_[queue]->tap.queue_attached(); }

    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;
    // Reads up to `max` packets into the staging slots. The slots are reused
    // by the next call, so call it only once the previous burst is done
    // (an empty `burst`); otherwise it takes nothing.
    uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) override;
    int32_t receive_one(uint16_t queue, std::span<const iovec> buffer) override;
    uint32_t max_packet_size() const override;
    uint32_t gso_header_size(uint16_t) const override { return device().vnet_header_size(); }

    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;

    WaitSpec receive_wait(uint16_t queue) const override;
    WaitSpec transmit_wait(uint16_t queue) const override;
    QueueCounters& rx_counters(uint16_t queue) override { return queues_[queue]->rx; }
    QueueCounters& tx_counters(uint16_t queue) override { return queues_[queue]->tx; }

private:
    // One tap queue and everything its worker uses with it.
    struct Queue {
        Queue(TapDevice device, io::BatchMode mode, std::string_view owner);
        TapDevice tap;
        io::BatchWriter writer;
        std::array<int, packet::kMaxBurstPackets> results{};
        // Push-style source: packet::kMaxBurstPackets slots of slot_size bytes, sized
        // on first use (and again only if the largest frame grows).
        std::vector<uint8_t> slots;
        uint32_t slot_size = 0;
        // Fill-style destination: one staging buffer.
        std::vector<uint8_t> staging;
        iovec staging_iov{};
        uint16_t staged_packets = 0;
        uint64_t staged_bytes = 0;
        QueueCounters rx;
        QueueCounters tx;
    };

    static std::vector<std::unique_ptr<Queue>> open_queues(const std::string& port_name,
                                                           const TapPortOptions& options);

    std::vector<std::unique_ptr<Queue>> queues_;
    unsigned link_mtu_;  // control thread; last MTU read while the link was in our netns
    std::atomic<uint32_t> max_packet_;
};

}  // namespace vnet::ports
