// TapPort: a host tap device as a port. Queue pair q is tap queue q: with
// more than one, the tap is opened IFF_MULTI_QUEUE with one fd per queue, and
// each queue has its own writer, staging and counters, owned by the worker
// that owns the queue pair (no sharing between workers).
//
// Capabilities of every queue pair: burst sink, reader, burst source. It
// lends no buffers: what it could offer is a bounce buffer, not memory a
// packet stays in, so a reader feeding a tap goes through its staging slots
// (push), never through a copy of its own.
//
//  * burst sink: a burst from a guest's TX ring is written with one write
//    per packet (tun takes exactly one per call), straight from guest
//    memory, vnet header and all, through io::BatchWriter (io_uring: one
//    submission per burst; or writev). EAGAIN/ENOBUFS: the rest of the
//    burst is kept by the path, which waits for EPOLLOUT. Other errors
//    (EINVAL for a header the kernel rejects) drop the packet, counted.
//  * reader: packets are read straight into a lender's buffers, a guest's
//    RX buffers: one readv() for one packet, or for many (receive_many)
//    one io_uring_enter with a READ per buffer (RWF_NOWAIT, fixed file),
//    so a burst from the tap costs one system call instead of one per
//    frame. The reads run in order inside that call; one that finds the
//    queue empty (-EAGAIN) while a later one still gets a frame (it
//    arrived meanwhile) leaves a hole, closed by moving that frame down
//    into the empty buffer: what is returned is a prefix, in tun's order.
//  * burst source (tap -> tap, and every tap on a switch: pods, a VXLAN
//    uplink's vxtap): a burst is read into the port's own staging slots
//    (one per packet, sized for the largest frame) and handed out like a
//    guest's TX burst, so the destination writes it in one submission,
//    after GRO. The one user-space copy of the hop is this read; nothing
//    copies it again. The first frame is read with readv (an empty queue,
//    what a spinning worker mostly finds, costs one syscall); once it got
//    one, the rest go as io_uring batches of unlinked READs, starting at
//    one and doubling while every read finds a frame. A read that found
//    the queue empty before a later one got a frame just leaves its slot
//    unused.
//
// A tap whose device goes away under vnetd (`ip link del`, or the network
// namespace holding it deleted) answers every read and write on its fd with
// EBADFD and polls as EPOLLERR forever. Each queue notices it at its first
// EBADFD while attached (a detached queue says the same, so that one stays
// an error), then makes no syscall on it again: what is bound for it is
// completed unsent and counted as `device_gone`, nothing is read, and it
// offers no fd to sleep on (a worker would wake at once, every time). The
// port tells the gone handler once, on the worker that noticed.
//
// The tap follows its peer (Port's control-thread hooks): offloads from the
// guest's features (or all of them when the peer has no front end), tap
// queues attached while the guest runs that queue pair. It owns the XDP
// program attached to it, detached before the tap closes.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/batch_writer.hpp"
#include "io/lone_frames.hpp"
#include "io/uring_batch.hpp"
#include "ports/port.hpp"
#include "ports/tap/tap_device.hpp"
#include "ports/tap/tap_xdp.hpp"

namespace vnet::ports {

struct TapPortOptions {
    TapOptions tap;
    io::BatchMode submit_mode = io::BatchMode::io_uring;
    // Tap queues (IFF_MULTI_QUEUE when more than one; at most 256, tun's
    // MAX_TAP_QUEUES). An existing single-queue tap of that name is served
    // with one queue (logged) rather than refused.
    uint16_t queues = 1;
    // Upgrade in place: the queue fds the vnetd we replace handed over, in
    // queue order (TapOptions::handed_over_fd); owned by the constructor,
    // which closes those beyond `queues` and opens what is missing.
    std::vector<int> handed_over_fds;
};

// The reader comes first: receive_one is called per packet (fill), and a
// call through a base other than the first goes through a this-adjusting
// thunk; the other roles are called per burst.
class TapPort final : public Reader, public Port, public BurstSink, public BurstSource {
public:
    TapPort(std::string name, const TapPortOptions& options);
    ~TapPort() override;

    uint16_t queue_count() const override { return static_cast<uint16_t>(queues_.size()); }
    QueuePairCapabilities capabilities(uint16_t) override {
        return {.burst_source = this, .burst_sink = this, .reader = this};
    }
    bool queue_ready(uint16_t) const override { return true; }

    // Queue 0's device: the name, ifindex, flags and offloads of the tap.
    TapDevice& device() { return queues_[0]->tap; }
    const TapDevice& device() const { return queues_[0]->tap; }
    // Upgrade in place: every queue's fd, for the successor.
    std::vector<int> queue_fds() const;
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

    // Start-up, before any worker writes to the tap: the program then sees
    // every frame vnetd sends. Detached when the port goes away.
    void attach_xdp(std::unique_ptr<TapXdpProgram> program) { xdp_ = std::move(program); }
    const TapXdpProgram* xdp() const { return xdp_.get(); }

    // Called once, on the worker that noticed, when the tap device is gone
    // (what it says: which call failed). Set before any worker runs.
    void set_gone_handler(std::function<void(const std::string& what)> handler) {
        gone_handler_ = std::move(handler);
    }
    bool gone() const { return gone_.load(std::memory_order_relaxed); }

    // Port's hooks: apply_guest_features, set_queue_attached; "tap" and "xdp".
    std::string follow_peer_features(virtio::FeatureSet features) override;
    void follow_peer_queue_pair(uint16_t queue, bool running) override {
        set_queue_attached(queue, running);
    }
    void describe(std::vector<Fact>& out) const override;

    uint16_t transmit_burst(uint16_t queue, const packet::PacketBurst& burst) override;
    // Reads up to `max` packets into the staging slots. The slots are reused
    // by the next call, so call it only once the previous burst is done
    // (an empty `burst`); otherwise it takes nothing.
    uint16_t receive_burst(uint16_t queue, packet::PacketBurst& burst, uint16_t max) override;
    int32_t receive_one(uint16_t queue, std::span<const iovec> buffer) override;
    uint16_t receive_many(uint16_t queue, const packet::PacketBurst& buffers,
                          std::span<int> lengths) override;
    uint32_t max_packet_size() const override;
    uint32_t gso_header_size(uint16_t) const override { return device().vnet_header_size(); }
    // The staging slots are simply reused by the next receive_burst.
    void complete_burst(uint16_t, const packet::PacketBurst&, uint16_t) override {}

    WaitSpec receive_wait(uint16_t queue) const override;
    WaitSpec transmit_wait(uint16_t queue) const override;
    packet::QueueCounters& rx_counters(uint16_t queue) override { return queues_[queue]->rx; }
    packet::QueueCounters& tx_counters(uint16_t queue) override { return queues_[queue]->tx; }

private:
    // One tap queue and everything its worker uses with it.
    struct Queue {
        Queue(TapDevice device, io::BatchMode mode, std::string_view owner);
        TapDevice tap;
        io::BatchWriter writer;
        // Batched reads (receive_many); null in writev mode or when no ring
        // could be made (then one readv per packet).
        std::unique_ptr<io::UringBatch> reader;
        std::array<int, packet::kMaxBurstPackets> results{};
        // Push-style source: packet::kMaxBurstPackets slots of slot_size bytes, sized
        // on first use (and again only if the largest frame grows).
        std::vector<uint8_t> slots;
        uint32_t slot_size = 0;
        packet::QueueCounters rx;
        packet::QueueCounters tx;
        bool gone = false;    // the device went away: no syscall on tap.fd() any more
        io::LoneFrames lone;  // read_staged's: frames one at a time
    };

    // Reads up to `max` frames into the empty buffers `slots` (the staging
    // slots), each read's bytes or -errno into q.results; returns how many
    // reads ran. A read after a failed one may still have found a frame.
    uint16_t read_staged(Queue& q, const packet::PacketBurst& slots, uint16_t max);

    // `error` (-errno) came from a read or write of `q`: true when it says
    // the device is gone, which marks `q` gone (and tells the handler once).
    bool device_gone(Queue& q, int error, const char* call);

    static std::vector<std::unique_ptr<Queue>> open_queues(const std::string& port_name,
                                                           const TapPortOptions& options);

    std::vector<std::unique_ptr<Queue>> queues_;
    unsigned link_mtu_;  // control thread; last MTU read while the link was in our netns
    std::atomic<uint32_t> max_packet_;
    std::function<void(const std::string&)> gone_handler_;
    std::atomic<bool> gone_{false};  // some queue found the device gone
    // After queues_: destroyed first, so the program is detached while the
    // tap still exists.
    std::unique_ptr<TapXdpProgram> xdp_;
};

}  // namespace vnet::ports
