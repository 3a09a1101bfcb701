// TapPort: a host tap device as a port (one queue for now).
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
#include <vector>

#include "io/batch_writer.hpp"
#include "ports/port.hpp"
#include "ports/tap_device.hpp"

namespace vnet::ports {

struct TapPortOptions {
    TapOptions tap;
    io::BatchMode submit_mode = io::BatchMode::io_uring;
};

class TapPort final : public Port {
public:
    TapPort(std::string name, const TapPortOptions& options);
    ~TapPort() override;

    PortKind kind() const override { return PortKind::tap; }
    bool queue_ready(uint16_t) const override { return true; }

    TapDevice& device() { return tap_; }
    io::BatchMode submit_mode() const { return writer_.mode(); }

    // The guest at the other end negotiated `features`: let the kernel hand
    // us what it can digest (TUNSETOFFLOAD, QEMU's rule), and size reads.
    // Control thread; an ioctl, safe while the worker reads and writes.
    TunOffloads apply_guest_features(virtio::FeatureSet features);

    uint16_t transmit_burst(uint16_t queue, const PacketBurst& burst) override;
    // Reads up to `max` packets into the staging slots. The slots are reused
    // by the next call, so call it only once the previous burst is done
    // (an empty `burst`); otherwise it takes nothing.
    uint16_t receive_burst(uint16_t queue, PacketBurst& burst, uint16_t max) override;
    int32_t receive_one(uint16_t queue, std::span<const iovec> buffer) override;
    uint32_t max_packet_size() const override;
    uint32_t gso_header_size(uint16_t) const override { return tap_.vnet_header_size(); }

    bool next_rx_buffer(uint16_t queue, uint32_t max_packet, std::span<const iovec>* out) override;
    void commit_rx_buffer(uint16_t queue, uint32_t len) override;
    void flush_rx_buffers(uint16_t queue) override;

    WaitSpec receive_wait(uint16_t queue) const override;
    WaitSpec transmit_wait(uint16_t queue) const override;
    QueueCounters& rx_counters(uint16_t) override { return rx_; }
    QueueCounters& tx_counters(uint16_t) override { return tx_; }

private:
    TapDevice tap_;
    io::BatchWriter writer_;
    unsigned link_mtu_;  // control thread; last MTU read while the link was in our netns
    std::atomic<uint32_t> max_packet_;
    std::array<io::PacketIov, kMaxBurstPackets> submit_{};
    std::array<int, kMaxBurstPackets> results_{};
    // Push-style source: kMaxBurstPackets slots of slot_size_ bytes, sized on
    // first use (and again only if the largest frame grows).
    std::vector<uint8_t> slots_;
    uint32_t slot_size_ = 0;
    std::array<iovec, kMaxBurstPackets> slot_iov_{};
    std::array<io::PacketIov, kMaxBurstPackets> read_{};
    // Fill-style destination: one staging buffer.
    std::vector<uint8_t> staging_;
    iovec staging_iov_{};
    uint16_t staged_packets_ = 0;
    uint64_t staged_bytes_ = 0;
    QueueCounters rx_;
    QueueCounters tx_;
};

}  // namespace vnet::ports
