// TapDevice: one queue of a Linux tap, opened the way the datapath needs it
// (reference/kernel-datapath.md §1 rows 3, 4, 5, 13, 14 and §3):
//
//   IFF_TAP | IFF_NO_PI | IFF_VNET_HDR, header size 12 (virtio 1.2 §5.1.6 with
//   VERSION_1), so a guest's virtio_net_hdr passes through unchanged;
//   O_NONBLOCK, and sndbuf left at INT_MAX: both are conditions of tun's
//   build_skb fast path (tun_can_build_skb), the only path with native XDP;
//   no offloads until the guest's features are known (set_offloads).
//
// Owns the queue fd. A tap this object created disappears when the last fd
// of it closes, unless `persist` is set (TUNSETPERSIST). Opening the name of
// an existing tap attaches to it (it must be a tap with matching flags).
//
// All set-up errors throw PortSetupError with the device name, the step,
// the errno text and a hint. Nothing here runs per packet: the datapath uses
// fd() with io::BatchWriter / io::BatchReader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"
#include "ports/tap/tap_offloads.hpp"
#include "virtio/net_header.hpp"

namespace vnet::ports {

struct TapOptions {
    // Interface name (at most 15 characters). Empty: the kernel picks "tapN".
    std::string name;
    // IFF_MULTI_QUEUE: each TapDevice opened with the same name and this flag
    // is one more queue of the device (up to 256, one fd per guest queue pair).
    bool multi_queue = false;
    // IFF_NAPI: per-queue NAPI + GRO on the write path. Off by default: with
    // one packet per write each write schedules its own NAPI poll, which
    // loses pps (docs/BENCHMARKS.md, seed000). Fails if TUNGETFEATURES does
    // not offer it.
    bool napi = false;
    // IFF_NAPI_FRAGS (needs napi): "very much test only" upstream; avoid.
    bool napi_frags = false;
    // TUNSETPERSIST 1: the device outlives this fd. When false, an existing
    // persistent tap is left persistent (we do not own its lifetime).
    bool persist = false;
    // TUNSETVNETHDRSZ: 12 for VERSION_1/MRG_RXBUF guests, 10 for legacy ones.
    unsigned vnet_header_size = sizeof(virtio::NetHeader);
    // SIOCSIFMTU when set; otherwise the device keeps its MTU (1500 for new taps).
    std::optional<unsigned> mtu;
    // SIOCSIFTXQLEN when set: the depth of the host->reader ring (ptr_ring,
    // default 500 = TUN_READQ_SIZE); when it is full tun drops, so size it to
    // what one reader turn drains (§1 row 7).
    std::optional<unsigned> txqueuelen;
    // Bring the link up (a write to a down tap fails with EIO).
    bool link_up = true;
    // Upgrade in place: a queue fd of this tap that the vnetd we replace
    // handed over, taken (owned from the constructor on, also when it
    // throws) instead of a TUNSETIFF, so the device never goes away or
    // down and no EBUSY wait is needed. Its name must be `name`.
    int handed_over_fd = -1;
};

class TapDevice {
public:
    explicit TapDevice(const TapOptions& options);
    // One more queue of `first`, a device opened with multi_queue: a fd of
    // its own (TUNSETIFF with the same flags, its own sndbuf), sharing what
    // belongs to the device (header size, offloads, link settings).
    // `handed_over_fd`: as TapOptions::handed_over_fd, for that queue.
    static TapDevice another_queue_of(const TapDevice& first, int handed_over_fd = -1);
    TapDevice(TapDevice&&) noexcept = default;
    TapDevice& operator=(TapDevice&&) noexcept = default;
    TapDevice(const TapDevice&) = delete;
    TapDevice& operator=(const TapDevice&) = delete;
    ~TapDevice() = default;

    // TUNGETFEATURES: the IFF_* flags this kernel's tun accepts in TUNSETIFF.
    static unsigned kernel_features();

    int fd() const noexcept { return fd_.get(); }
    const std::string& name() const noexcept { return name_; }
    // Interface index in the namespace the tap was opened in (cached, so it
    // stays readable after the link is moved into another namespace).
    unsigned ifindex() const noexcept { return ifindex_; }
    // The IFF_* flags the device reports (TUNGETIFF), e.g. IFF_NAPI.
    unsigned flags() const noexcept { return flags_; }
    bool napi() const noexcept;
    // True when no device of that name existed before we opened it.
    bool created() const noexcept { return created_; }
    unsigned vnet_header_size() const noexcept { return vnet_header_size_; }

    // Applies TUNSETOFFLOAD, dropping USO and then UFO if the kernel refuses
    // them (EINVAL), and returns what was applied. Call with
    // tun_offloads_for_guest() after feature negotiation and again on
    // VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET. Throws if even the last fallback fails.
    TunOffloads set_offloads(TunOffloads wanted);
    TunOffloads offloads() const noexcept { return offloads_; }

    // TUNSETPERSIST.
    void set_persist(bool persist);

    // TUNSETQUEUE: a detached queue gets no frames from the kernel (its flow
    // steering spreads over the attached ones) and refuses reads and writes
    // (EBADFD). QEMU detaches the queues of a guest's disabled queue pairs.
    // Only for multi_queue devices; idempotent.
    void set_queue_attached(bool attached);
    bool queue_attached() const noexcept { return attached_; }

    // Link settings by name: valid while the link is in our network namespace.
    unsigned txqueuelen() const;
    void set_txqueuelen(unsigned len);
    unsigned mtu() const;
    void set_mtu(unsigned mtu);
    void set_link_up(bool up);

private:
    TapDevice() = default;
    // TUNSETIFF, waiting (bounded) while the tap is still attached to a
    // process that is exiting.
    void attach_when_released(unsigned flags);
    // The handed-over queue in fd_ is a queue of the tap named name_.
    void adopt_handed_over();
    void configure_queue(const TapOptions& options);
    void set_sndbuf_unlimited();
    void configure_link(const TapOptions& options);
    std::string label() const;

    UniqueFd fd_;
    std::string name_;
    unsigned ifindex_ = 0;
    unsigned flags_ = 0;
    unsigned vnet_header_size_ = 0;
    bool created_ = false;
    bool attached_ = true;
    TunOffloads offloads_;
};

}  // namespace vnet::ports
