#include "ports/tap_port.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "io/batch_reader.hpp"
#include "ports/setup_error.hpp"

namespace vnet::ports {

namespace {

// Ethernet header plus one VLAN tag: what the kernel may add to an MTU-sized
// payload on a tap (tun_put_user re-inserts an out-of-band tag).
constexpr uint32_t kL2Overhead = 14 + 4;
// A GSO super-frame: an IP packet of up to 64 KiB plus L2.
constexpr uint32_t kMaxGsoFrame = 65535 + kL2Overhead;

uint32_t max_packet_for(const TapDevice& tap, unsigned link_mtu, TunOffloads offloads) {
    bool gso = offloads.has(TunOffload::tso4) || offloads.has(TunOffload::tso6) ||
               offloads.has(TunOffload::uso4);
    uint32_t frame = gso ? kMaxGsoFrame : link_mtu + kL2Overhead;
    return tap.vnet_header_size() + frame;
}

}  // namespace

TapPort::TapPort(std::string name, const TapPortOptions& options)
    : Port(std::move(name)),
      tap_(options.tap),
      writer_(options.submit_mode, io::BatchWriter::kDefaultRingDepth, this->name()),
      link_mtu_(tap_.mtu()),
      max_packet_(max_packet_for(tap_, link_mtu_, tap_.offloads())) {
    writer_.register_fd(tap_.fd());
}

TapPort::~TapPort() {
    writer_.unregister_fd(tap_.fd());
}

TunOffloads TapPort::apply_guest_features(virtio::FeatureSet features) {
    TunOffloads applied = tap_.set_offloads(tun_offloads_for_guest(features));
    try {
        link_mtu_ = tap_.mtu();
    } catch (const PortSetupError&) {
        // The link was moved to another network namespace (its fd still
        // works, its name does not resolve here): keep the MTU seen at open.
    }
    max_packet_.store(max_packet_for(tap_, link_mtu_, applied), std::memory_order_relaxed);
    return applied;
}

uint32_t TapPort::max_packet_size() const {
    return max_packet_.load(std::memory_order_relaxed);
}

uint16_t TapPort::transmit_burst(uint16_t, const PacketBurst& burst) {
    for (uint16_t i = 0; i < burst.count; ++i) {
        submit_[i] = io::PacketIov{burst.iovecs.data() + burst.packets[i].first_iov,
                                   burst.packets[i].iov_count};
    }
    size_t finished =
        writer_.submit(tap_.fd(), std::span<const io::PacketIov>(submit_.data(), burst.count),
                       std::span<int>(results_.data(), burst.count));
    uint16_t written = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < finished; ++i) {
        if (results_[i] >= 0) {
            ++written;
            bytes += burst.packets[i].len - tap_.vnet_header_size();  // frame bytes
        } else {
            // Refused for good (a header the kernel rejects, link down): the
            // packet is completed to the guest and counted, never retried.
            tx_.count_drop(DropReason::tx_error);
        }
    }
    tx_.count_burst(written, bytes);
    return static_cast<uint16_t>(finished);
}

uint16_t TapPort::receive_burst(uint16_t, PacketBurst& burst, uint16_t max) {
    if (burst.count != 0) {
        return 0;
    }
    const uint32_t frame_max = max_packet_size();
    if (frame_max > slot_size_) {
        // Once per size change (offloads turned on): not per packet.
        slots_.assign(size_t{kMaxBurstPackets} * frame_max, 0);
        slot_size_ = frame_max;
    }
    max = std::min<uint16_t>(max, kMaxBurstPackets);
    for (uint16_t i = 0; i < max; ++i) {
        slot_iov_[i] = iovec{slots_.data() + size_t{i} * slot_size_, slot_size_};
        read_[i] = io::PacketIov{&slot_iov_[i], 1};
    }
    io::ReadBurst got = io::read_burst(tap_.fd(), std::span<const io::PacketIov>(read_.data(), max),
                                       std::span<int>(results_.data(), max));
    if (got.stop < 0 && got.stop != -EAGAIN) {
        rx_.count_drop(DropReason::rx_error);
    }
    uint64_t bytes = 0;
    const uint32_t header = tap_.vnet_header_size();
    for (size_t i = 0; i < got.packets; ++i) {
        uint32_t len = static_cast<uint32_t>(results_[i]);
        if (len <= header) {
            // tun never returns less than the header plus a frame; a zero-length
            // frame would only confuse the destination.
            rx_.count_drop(DropReason::packet_too_short);
            continue;
        }
        burst.free_iovecs()[0] = iovec{slot_iov_[i].iov_base, len};
        burst.push(1, len, static_cast<uint32_t>(i));
        bytes += len - header;
    }
    rx_.count_burst(burst.count, bytes);
    return burst.count;
}

int32_t TapPort::receive_one(uint16_t, std::span<const iovec> buffer) {
    ssize_t n = ::readv(tap_.fd(), buffer.data(), static_cast<int>(buffer.size()));
    if (n > 0) {
        // Bursts (and their sizes) are counted by the destination at flush.
        rx_.packets.add(1);
        rx_.bytes.add(static_cast<uint64_t>(n) - tap_.vnet_header_size());
        return static_cast<int32_t>(n);
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        rx_.count_drop(DropReason::rx_error);
        return -errno;
    }
    return 0;
}

bool TapPort::next_rx_buffer(uint16_t, uint32_t max_packet, std::span<const iovec>* out) {
    if (staging_.size() < max_packet) {
        staging_.resize(max_packet);  // grows once, to the largest packet asked for
    }
    staging_iov_ = iovec{staging_.data(), max_packet};
    *out = std::span<const iovec>(&staging_iov_, 1);
    return true;
}

void TapPort::commit_rx_buffer(uint16_t, uint32_t len) {
    iovec frame{staging_.data(), len};
    ssize_t n = ::writev(tap_.fd(), &frame, 1);
    if (n < 0) {
        // No room in a tap -> tap path: the kernel would drop it on its own
        // queue too; count it here where it happened.
        tx_.count_drop(errno == EAGAIN || errno == ENOBUFS ? DropReason::no_destination
                                                           : DropReason::tx_error);
        return;
    }
    ++staged_packets_;
    staged_bytes_ += len - std::min<uint32_t>(len, tap_.vnet_header_size());
}

void TapPort::flush_rx_buffers(uint16_t) {
    tx_.count_burst(staged_packets_, staged_bytes_);
    staged_packets_ = 0;
    staged_bytes_ = 0;
}

WaitSpec TapPort::receive_wait(uint16_t) const {
    return WaitSpec{tap_.fd(), EPOLLIN, false};
}
WaitSpec TapPort::transmit_wait(uint16_t) const {
    return WaitSpec{tap_.fd(), EPOLLOUT, false};
}

}  // namespace vnet::ports
