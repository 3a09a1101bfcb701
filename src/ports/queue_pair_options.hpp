// QueuePairOptions: how the engines serve a queue pair, one struct for all
// of them. The option table's datapath rows set it (it is the per-queue-pair
// part of control's DatapathConfig), and it is handed down unchanged: to
// each cross-connect path (dataplane::ForwardPath), to each switch
// (SwitchDatapathOptions::queue_pair), and from a path to its destination's
// guest RX pacing (ports::RxPacing).
#pragma once

#include <cstdint>

namespace vnet::ports {

struct QueuePairOptions {
    uint16_t tx_batch =
        64;               // VHOST_NET_BATCH, 0..64; 0: per-packet (one pop, one write, one publish)
    bool tx_peek = true;  // hold the batch for one submission while the ring has more (MSG_MORE)
    bool gro = true;      // coalesce TCP segments of a batch bound for a tap into GSO frames
    bool gro_udp = false;    // ... and UDP datagrams into USO frames (needs Linux >= 6.2)
    uint32_t rx_frames = 0;  // guest RX coalescing (ethtool -C rx-frames); 0: per batch
    uint32_t rx_usecs = 0;   // ... deadline after the first held frame (ethtool -C rx-usecs)
    // Cross-connects without rx_frames: hold a stream's bursts
    // (RxStreamPacer); switch ports: defer a guest's call while a stream
    // fills its ring (ethtool -C adaptive-rx).
    bool adaptive_rx = true;
    uint32_t weight_packets = 256;    // per ring per turn (VHOST_NET_PKT_WEIGHT)
    uint32_t weight_bytes = 0x80000;  // per ring per turn (VHOST_NET_WEIGHT)
};

}  // namespace vnet::ports
