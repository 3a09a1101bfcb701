// vnet-pktgen's command line: what to connect to, which direction, and the
// traffic shape. Names mirror testpmd's txonly/rxonly knobs where they exist.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/frame_format.hpp"

namespace vnet::pktgen {

// reflect: send every received frame back (reflector.hpp).
enum class Direction : uint8_t { tx, rx, reflect };

struct PktgenOptions {
    std::string socket_path;
    bool server = false;  // listen and let the back end connect (net_vhost client=1)
    Direction direction = Direction::tx;

    uint64_t count = 0;      // 0 = unlimited
    double duration_s = 0;   // 0 = unlimited
    uint32_t size_min = 64;  // frame bytes without FCS; min == max for a fixed size
    uint32_t size_max = 64;
    uint32_t burst = 128;   // descriptors added per avail publish
    uint64_t rate_pps = 0;  // 0 = as fast as the back end takes them
    bool gso = false;       // TCP/IPv4 frames with GSO TCPV4 + NEEDS_CSUM
    uint16_t mss = 1448;
    uint16_t queue_size = 256;  // split: a power of two; packed: any of 1..32768
    bool packed = false;        // negotiate VIRTIO_F_RING_PACKED and drive packed rings
    bool mrg_rxbuf = true;
    bool event_idx = true;
    frontend::MacAddress src_mac{0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
    // TX: frame k comes from src_mac + (k mod src_mac_count), counting up in
    // its last two bytes, so a learning switch sees that many sources.
    uint32_t src_mac_count = 1;
    frontend::MacAddress dst_mac{0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
    bool json = false;

    double stats_interval_s = 1;  // periodic stats on stderr; 0 = off
    double connect_timeout_s = 30;
    double drain_timeout_s = 5;  // TX: wait this long for the back end to use what we sent
    // TX: when the back end hangs up, connect again (--connect-timeout) and
    // go on with the same rings; INFLIGHT_SHMFD is wanted, so a restarted
    // back end resumes what its previous life took and never completed.
    bool reconnect = false;
    uint32_t busy_poll_us = 50;  // spin on an idle ring before sleeping on its call eventfd
    uint64_t seed = 1;           // for --size-range
};

// Parses and checks argv; prints help or the error and exits on failure
// (start-up only).
PktgenOptions parse_options(int argc, char** argv);

}  // namespace vnet::pktgen
