// Per-queue counters: packets, bytes, bursts, a burst-size histogram and
// drops by named reason; every port kind and the virtio-net queues count
// with them. Written by the one worker that owns the queue and
// read by the stats reporter, so each field is a relaxed atomic updated with
// load+store (a plain mov on x86, no locked instruction on the datapath).
// Drop reasons and histogram buckets are enumerations with one name each
// (to_string, histogram_label): the stats table, the JSON and the metrics
// iterate over them, so a new reason is one enumerator and one name.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace vnet::packet {

enum class DropReason : uint8_t {
    bad_descriptor_chain,  // the guest broke a ring rule: the device is broken
    packet_too_short,      // no bytes beyond the virtio-net header (or < Ethernet header)
    too_many_segments,     // a chain needs more iovecs than writev takes
    tx_error,              // the destination refused the packet for good (e.g. tap EINVAL)
    rx_buffer_too_small,   // without MRG_RXBUF the guest's buffer could not hold the packet
    rx_error,              // a read from the source failed
    no_destination,        // the peer port is down (guest not connected, ring disabled)
    queue_disabled,  // started but disabled ring: TX is processed and dropped (vhost-user.rst)
    // A sender's virtio-net header that does not fit its own frame (guest
    // to guest, virtio/net/offload_adaptation.hpp): NEEDS_CSUM offsets past
    // the frame or not at the L4 checksum its GSO type implies; an unknown
    // GSO type, gso_size 0, hdr_len past the frame, headers that do not
    // parse as the GSO type says, or too many segments.
    bad_checksum_offsets,
    bad_gso_header,
    // A valid GSO frame for a receiver without the offload that vnetd does
    // not segment (IPv6 extension headers, IPv6 UFO, stacked VLAN tags).
    gso_unsupported,
    policed,  // over the port's ingress_policing_rate / _burst (token bucket)
    // The L2 switch (dataplane/switch/):
    vlan_not_allowed,    // a frame on a VLAN its port does not carry (or untagged on a trunk)
    spoofed,             // a source MAC the port is not allowed to send from (allowed_macs)
    invalid_source_mac,  // a multicast or all-zero source MAC (IEEE 802: never a sender)
    destination_full,    // the destination stayed full longer than the switch holds a burst
    // The port's own device went away under vnetd (a tap deleted, or the
    // network namespace holding it): what was bound for it is completed
    // unsent and counted, nothing more is read from it.
    device_gone,
    count_,
};
inline constexpr size_t kDropReasonCount = static_cast<size_t>(DropReason::count_);
std::string_view to_string(DropReason r);

// Burst sizes 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+.
inline constexpr size_t kBurstHistogramBuckets = 7;

class Counter {
public:
    void add(uint64_t n) {
        value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    uint64_t get() const { return value_.load(std::memory_order_relaxed); }
    void reset() { value_.store(0, std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> value_{0};
};

struct QueueCounters {
    Counter packets;
    Counter bytes;  // frame bytes: the virtio-net header is not counted (as the kernel counts)
    Counter bursts;
    std::array<Counter, kBurstHistogramBuckets> burst_sizes;
    std::array<Counter, kDropReasonCount> drops;
    // Guest RX rings: used-index publishes (each with the notify it may have
    // sent) held back by rx_frames / rx_usecs and merged into a later one.
    Counter publishes_coalesced;
    // User-space GRO on a TX batch (tap destinations): frames written that
    // were merged from several segments, and how many segments they carried.
    // `packets` counts frames as written, so packets - gro_frames +
    // gro_segments is what the source sent.
    Counter gro_frames;
    Counter gro_segments;
    // Notifications, counted per event, never per packet (virtio rings
    // only; a tap's stay 0). kicks: what the guest signalled on the ring's
    // kick eventfd, summed from the values the worker read when it woke on
    // it (each driver write adds 1, so this is the guest's kick count once
    // the worker has slept on the ring again; kicks stay suppressed while
    // the worker polls, and poll mode reads none). calls: eventfd writes
    // by which vnetd interrupted the guest for this ring.
    Counter kicks;
    Counter calls;
    // Restart without a guest reboot (INFLIGHT_SHMFD, virtio rings only):
    // chains a previous back end had taken from this ring and not completed,
    // handed out again when the ring started. Counted at ring start, by the
    // ring's owner, like every other counter here.
    Counter inflight_resumed;

    void count_burst(uint16_t packets_in_burst, uint64_t bytes_in_burst) {
        if (packets_in_burst == 0) {
            return;
        }
        packets.add(packets_in_burst);
        bytes.add(bytes_in_burst);
        bursts.add(1);
        burst_sizes[histogram_bucket(packets_in_burst)].add(1);
    }
    void count_drop(DropReason r, uint64_t n = 1) { drops[static_cast<size_t>(r)].add(n); }
    uint64_t total_drops() const;
    void reset();

    static size_t histogram_bucket(uint16_t burst) {
        size_t bucket = static_cast<size_t>(31 - __builtin_clz(burst));  // floor(log2)
        return bucket < kBurstHistogramBuckets ? bucket : kBurstHistogramBuckets - 1;
    }
    static std::string_view histogram_label(size_t bucket);
};

}  // namespace vnet::packet
