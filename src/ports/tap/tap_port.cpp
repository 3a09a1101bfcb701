#include "ports/tap/tap_port.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <linux/if_tun.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>

#include "common/log.hpp"
#include "packet/iovec.hpp"
#include "packet/wire.hpp"
#include "ports/setup_error.hpp"

namespace vnet::ports {

namespace {

// Ethernet header plus one VLAN tag: what the kernel may add to an MTU-sized
// payload on a tap (tun_put_user re-inserts an out-of-band tag).
constexpr uint32_t kL2Overhead = packet::kEthHeaderLen + packet::kVlanTagLen;
// A GSO super-frame: an IP packet of up to 64 KiB plus L2.
constexpr uint32_t kMaxGsoFrame = packet::kMaxIpPacketLen + kL2Overhead;

uint32_t max_packet_for(const TapDevice& tap, unsigned link_mtu, TunOffloads offloads) {
    bool gso = offloads.has(TunOffload::tso4) || offloads.has(TunOffload::tso6) ||
               offloads.has(TunOffload::uso4);
    uint32_t frame = gso ? kMaxGsoFrame : link_mtu + kL2Overhead;
    return tap.vnet_header_size() + frame;
}

}  // namespace

namespace {

// Reads per io_uring_enter at most: a burst (packet::kMaxBurstPackets).
constexpr unsigned kReadRingDepth = packet::kMaxBurstPackets;

std::unique_ptr<io::UringBatch> make_read_ring(io::BatchMode mode, int fd) {
    if (mode != io::BatchMode::io_uring) {
        return nullptr;
    }
    try {
        auto ring = std::make_unique<io::UringBatch>(kReadRingDepth);
        ring->register_fd(fd);
        return ring;
    } catch (const std::system_error&) {
        return nullptr;  // the writer logged why io_uring is not there
    }
}

}  // namespace

TapPort::Queue::Queue(TapDevice device, io::BatchMode mode, std::string_view owner)
    : tap(std::move(device)),
      writer(mode, io::BatchWriter::kDefaultRingDepth, owner),
      reader(make_read_ring(writer.mode(), tap.fd())) {
    writer.register_fd(tap.fd());
}

std::vector<std::unique_ptr<TapPort::Queue>> TapPort::open_queues(const std::string& port_name,
                                                                  const TapPortOptions& options) {
    // Every handed-over fd is owned here, whatever throws below.
    std::vector<UniqueFd> handed_over;
    for (int fd : options.handed_over_fds) {
        handed_over.emplace_back(fd);
    }
    auto next_handed_over = [&handed_over](size_t queue) {
        return queue < handed_over.size() ? handed_over[queue].release() : -1;
    };
    // tun's MAX_TAP_QUEUES.
    constexpr uint16_t kMaxTapQueues = 256;
    if (options.queues == 0 || options.queues > kMaxTapQueues) {
        throw_option_error("tap '" + options.tap.name + "'",
                           "queues must be 1.." + std::to_string(kMaxTapQueues) + ", not " +
                               std::to_string(options.queues));
    }
    TapOptions first = options.tap;
    first.multi_queue = first.multi_queue || options.queues > 1;
    first.handed_over_fd = next_handed_over(0);
    std::optional<TapDevice> device;
    try {
        device.emplace(first);
    } catch (const PortSetupError& e) {
        // EINVAL on an existing device: it was made single-queue (ip tuntap
        // add without multi_queue). Serve it with one queue pair rather than
        // refuse it; the guest then runs one queue pair on this tap.
        const bool existed = !first.name.empty() && ::if_nametoindex(first.name.c_str()) != 0;
        if (!first.multi_queue || options.tap.multi_queue || e.error_number() != EINVAL ||
            !existed || first.handed_over_fd >= 0) {
            throw;
        }
        first.multi_queue = false;
        device.emplace(first);
        make_logger(port_name)->warn(
            "tap {} exists without multi_queue: serving 1 queue instead of {}", first.name,
            options.queues);
    }
    const uint16_t count = device->flags() & IFF_MULTI_QUEUE ? options.queues : uint16_t{1};
    std::vector<std::unique_ptr<Queue>> queues;
    queues.push_back(std::make_unique<Queue>(std::move(*device), options.submit_mode, port_name));
    for (uint16_t q = 1; q < count; ++q) {
        queues.push_back(std::make_unique<Queue>(
            TapDevice::another_queue_of(queues[0]->tap, next_handed_over(q)), options.submit_mode,
            port_name));
    }
    return queues;
}

TapPort::TapPort(std::string name, const TapPortOptions& options)
    : Port(std::move(name)),
      queues_(open_queues(this->name(), options)),
      link_mtu_(device().mtu()),
      max_packet_(max_packet_for(device(), link_mtu_, device().offloads())) {}

std::vector<int> TapPort::queue_fds() const {
    std::vector<int> fds;
    for (const auto& q : queues_) {
        fds.push_back(q->tap.fd());
    }
    return fds;
}

TapPort::~TapPort() {
    for (auto& q : queues_) {
        q->writer.unregister_fd(q->tap.fd());
        if (q->reader != nullptr) {
            q->reader->unregister_fd(q->tap.fd());
        }
    }
}

void TapPort::set_queue_attached(uint16_t queue, bool attached) {
    if (queue == 0 || queue >= queues_.size()) {
        return;
    }
    queues_[queue]->tap.set_queue_attached(attached);
}

TunOffloads TapPort::apply_guest_features(virtio::FeatureSet features) {
    // Offloads belong to the device: one TUNSETOFFLOAD on any queue sets them.
    TunOffloads applied = device().set_offloads(tun_offloads_for_guest(features));
    try {
        link_mtu_ = device().mtu();
    } catch (const PortSetupError&) {
        // The link was moved to another network namespace (its fd still
        // works, its name does not resolve here): keep the MTU seen at open.
    }
    max_packet_.store(max_packet_for(device(), link_mtu_, applied), std::memory_order_relaxed);
    return applied;
}

std::string TapPort::follow_peer_features(virtio::FeatureSet features) {
    return "tap " + device().name() + " offloads " + to_string(apply_guest_features(features));
}

void TapPort::describe(std::vector<Fact>& out) const {
    out.push_back({"tap", "ifname", device().name()});
    out.push_back({"tap", "napi", device().napi()});
    out.push_back({"tap", "offloads", to_string(device().offloads())});
    out.push_back({"tap", "submit", std::string(io::to_string(submit_mode()))});
    // One fd per queue (IFF_MULTI_QUEUE), opened with the port and kept for its life.
    std::string fds;
    for (const auto& q : queues_) {
        fds += (fds.empty() ? "" : ",") + std::to_string(q->tap.fd());
    }
    out.push_back({"tap", "queues", uint64_t{queues_.size()}});
    out.push_back({"tap", "fds", fds});
    out.push_back({"tap", "gone", gone()});
    if (xdp_ != nullptr) {
        out.push_back({"xdp", "file", xdp_->file()});
        out.push_back({"xdp", "section", xdp_->section()});
        out.push_back({"xdp", "program", xdp_->program_name()});
        out.push_back({"xdp", "mode", std::string(to_string(xdp_->mode()))});
        out.push_back({"xdp", "id", uint64_t{xdp_->program_id()}});
    }
}

uint32_t TapPort::max_packet_size() const {
    return max_packet_.load(std::memory_order_relaxed);
}

// Cold: once per queue. tun answers EBADFD when its file has no device:
// the device was unregistered (tun_detach_all) or this queue is detached
// (TUNSETQUEUE), which the datapath never uses while detached.
bool TapPort::device_gone(Queue& q, int error, const char* call) {
    if (error != -EBADFD || !q.tap.queue_attached()) {
        return false;
    }
    q.gone = true;
    if (!gone_.exchange(true, std::memory_order_relaxed) && gone_handler_) {
        gone_handler_(std::string(call) + " of tap " + q.tap.name() + ": " + std::strerror(-error));
    }
    return true;
}

uint16_t TapPort::transmit_burst(uint16_t queue, const packet::PacketBurst& burst) {
    Queue& q = *queues_[queue];
    if (q.gone) {
        q.tx.count_drop(packet::DropReason::device_gone, burst.count);
        return burst.count;
    }
    size_t finished =
        q.writer.submit(q.tap.fd(), burst, std::span<int>(q.results.data(), burst.count));
    uint16_t written = 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < finished; ++i) {
        if (q.results[i] >= 0) {
            ++written;
            bytes += burst.packets[i].len - q.tap.vnet_header_size();  // frame bytes
        } else if (q.gone || device_gone(q, q.results[i], "write")) {
            q.tx.count_drop(packet::DropReason::device_gone);
        } else {
            // Refused for good (a header the kernel rejects, link down): the
            // packet is completed to the guest and counted, never retried.
            q.tx.count_drop(packet::DropReason::tx_error);
        }
    }
    q.tx.count_burst(written, bytes);
    return static_cast<uint16_t>(finished);
}

namespace {

// One readv of frame `i` into its slot: bytes, or -errno.
int read_slot(int fd, const packet::PacketBurst& slots, uint16_t i) {
    const packet::BurstPacket& p = slots.packets[i];
    for (;;) {
        const ssize_t n = ::readv(fd, slots.iovecs.data() + p.first_iov, p.iov_count);
        if (n >= 0) {
            return static_cast<int>(n);
        }
        if (errno != EINTR) {
            return -errno;
        }
    }
}

}  // namespace

// The first frame is read alone (readv): an empty queue, what most polls
// of a worker spinning between bursts find, costs one system call. Once
// it found a frame, the rest go in batches of unlinked READs, one
// io_uring_enter each. Not linked: a tun read is shorter than its buffer,
// which io_uring counts as a failed link. Every READ of a batch runs, and
// one that finds the queue empty still takes tun's ring lock against the
// writer filling it. Frames come in bursts of their writer's (another
// worker's tap write, tc's redirect), so a batch sized from the last
// burst would, after a long one, mostly read nothing; it starts at one
// instead and doubles while every read finds a frame, so no more reads
// find nothing than found a frame. Frames that come one at a time are
// handed over without the read after them (io/lone_frames.hpp).
uint16_t TapPort::read_staged(Queue& q, const packet::PacketBurst& slots, uint16_t max) {
    if (max == 0) {
        return 0;
    }
    const int fd = q.tap.fd();
    q.results[0] = read_slot(fd, slots, 0);
    uint16_t tried = 1;
    bool more = q.results[0] >= 0;
    if (q.lone.stop_after_first(more)) {
        return 1;
    }
    uint16_t batch = 1;
    while (more && tried < max) {
        const auto n = std::min<uint16_t>(batch, static_cast<uint16_t>(max - tried));
        if (n == 1 || q.reader == nullptr || q.reader->broken()) {
            q.results[tried] = read_slot(fd, slots, tried);
            more = q.results[tried] >= 0;
            ++tried;
        } else {
            int* results = q.results.data() + tried;
            q.reader->run(io::UringBatch::Op::readv, fd, slots, tried, n, results,
                          /*linked=*/false);
            more = std::all_of(results, results + n, [](int r) { return r >= 0; });
            tried = static_cast<uint16_t>(tried + n);
        }
        batch = static_cast<uint16_t>(std::min<uint32_t>(uint32_t{n} * 2, max));
    }
    q.lone.round_ended(
        static_cast<uint32_t>(std::count_if(q.results.begin(), q.results.begin() + tried,
                                            [](int r) { return r >= 0; })),
        !more);
    return tried;
}

uint16_t TapPort::receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) {
    if (burst.count != 0) {
        return 0;
    }
    Queue& q = *queues_[queue];
    if (q.gone) {
        return 0;
    }
    const uint32_t frame_max = max_packet_size();
    if (frame_max > q.slot_size) {
        // Once per size change (offloads turned on): not per packet.
        q.slots.assign(size_t{packet::kMaxBurstPackets} * frame_max, 0);
        q.slot_size = frame_max;
    }
    max = std::min<uint16_t>(max, packet::kMaxBurstPackets);
    // The slots go to the read as a burst of empty buffers (len = capacity);
    // afterwards the burst is rebuilt in place with what tun delivered.
    auto slot = [&q](size_t i) { return q.slots.data() + i * q.slot_size; };
    burst.clear();
    for (uint16_t i = 0; i < max; ++i) {
        burst.free_iovecs()[0] = iovec{slot(i), q.slot_size};
        burst.push(1, q.slot_size, i);
    }
    const uint16_t tried = read_staged(q, burst, max);
    burst.clear();
    uint64_t bytes = 0;
    const uint32_t header = q.tap.vnet_header_size();
    burst.header_size = static_cast<uint16_t>(header);
    bool failed = false;
    for (uint16_t i = 0; i < tried; ++i) {
        const int result = q.results[i];
        if (result < 0) {
            // A read that found the queue empty before a later one found a
            // frame (it arrived meanwhile) leaves its slot unused: the slots
            // are the port's own, so nothing moves. A failure is counted
            // once a burst, as the one read that failed before batching.
            if (result != -EAGAIN && result != io::kNotAttempted && !q.gone &&
                !device_gone(q, result, "read") && !failed) {
                q.rx.count_drop(packet::DropReason::rx_error);
                failed = true;
            }
            continue;
        }
        const auto len = static_cast<uint32_t>(result);
        if (len <= header) {
            // tun never returns less than the header plus a frame; a zero-length
            // frame would only confuse the destination.
            q.rx.count_drop(packet::DropReason::packet_too_short);
            continue;
        }
        burst.free_iovecs()[0] = iovec{slot(i), len};
        burst.push(1, len, static_cast<uint32_t>(i));
        bytes += len - header;
    }
    q.rx.count_burst(burst.count, bytes);
    return burst.count;
}

int32_t TapPort::receive_one(uint16_t queue, std::span<const iovec> buffer) {
    Queue& q = *queues_[queue];
    if (q.gone) {
        return 0;
    }
    ssize_t n = ::readv(q.tap.fd(), buffer.data(), static_cast<int>(buffer.size()));
    if (n > 0) {
        // Bursts (and their sizes) are counted by the destination at flush.
        q.rx.packets.add(1);
        q.rx.bytes.add(static_cast<uint64_t>(n) - q.tap.vnet_header_size());
        return static_cast<int32_t>(n);
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        const int error = -errno;
        if (device_gone(q, error, "read")) {
            return 0;  // no packet was lost: there is no device to read from
        }
        q.rx.count_drop(packet::DropReason::rx_error);
        return error;
    }
    return 0;
}

uint16_t TapPort::receive_many(uint16_t queue, const packet::PacketBurst& buffers,
                               std::span<int> lengths) {
    Queue& q = *queues_[queue];
    if (q.gone) {
        return 0;
    }
    if (buffers.count < 2 || q.reader == nullptr || q.reader->broken()) {
        return Reader::receive_many(queue, buffers, lengths);  // readv: cheaper for one
    }
    const size_t n = q.reader->run(io::UringBatch::Op::readv, q.tap.fd(), buffers, 0, buffers.count,
                                   lengths.data(), /*linked=*/false);
    uint16_t got = 0;
    uint64_t bytes = 0;
    const uint32_t header = q.tap.vnet_header_size();
    for (size_t i = 0; i < n; ++i) {
        const int result = lengths[i];
        if (result > 0) {
            const std::span<const iovec> hole = buffers.packet_iovecs(got);
            const std::span<const iovec> frame = buffers.packet_iovecs(static_cast<uint16_t>(i));
            if (got != i && hole[0].iov_base != frame[0].iov_base) {
                // A hole before it (a read that found the queue empty just
                // before this frame arrived): the frame moves down, so the
                // lender's buffers fill front to back in tun's order. Rare:
                // only a burst's tail races with the sender. (A discard
                // port lends one scratch buffer many times: nothing to move.)
                packet::copy_iovecs(hole, frame, static_cast<size_t>(result));
            }
            lengths[got++] = result;
            bytes += static_cast<uint64_t>(result) - header;
        } else if (result != -EAGAIN && result != io::kNotAttempted && result != 0 && !q.gone &&
                   !device_gone(q, result, "read")) {
            q.rx.count_drop(packet::DropReason::rx_error);
        }
    }
    // Bursts (and their sizes) are counted by the destination at flush.
    q.rx.packets.add(got);
    q.rx.bytes.add(bytes);
    return got;
}

// A gone device's fd polls EPOLLERR forever: nothing to sleep on (the
// worker's 100 ms timeout looks again, for nothing).
WaitSpec TapPort::receive_wait(uint16_t queue) const {
    const Queue& q = *queues_[queue];
    return q.gone ? WaitSpec{} : WaitSpec{q.tap.fd(), EPOLLIN, false};
}
WaitSpec TapPort::transmit_wait(uint16_t queue) const {
    const Queue& q = *queues_[queue];
    return q.gone ? WaitSpec{} : WaitSpec{q.tap.fd(), EPOLLOUT, false};
}

}  // namespace vnet::ports
