// What a virtio-net queue needs to know of the negotiated features: the
// header size and how RX buffers are used (virtio 1.2 §5.1.6); and, while
// the front end migrates the guest, the dirty log it marks.
#pragma once

#include <cstdint>

#include "virtio/features.hpp"
#include "virtio/log/queue_log.hpp"
#include "virtio/net_header.hpp"

namespace vnet::virtio {

struct NetQueueConfig {
    uint32_t header_size = 12;
    bool mergeable = false;          // VIRTIO_NET_F_MRG_RXBUF: a packet may span buffers
    bool write_num_buffers = false;  // MRG_RXBUF or VERSION_1: num_buffers is valid
    bool calls_wanted = false;       // the front end gave a call fd: ask should_notify
    QueueLog log;                    // inactive unless the front end logs (VHOST_F_LOG_ALL)
};

inline NetQueueConfig make_net_queue_config(FeatureSet features, bool calls_wanted) {
    NetQueueConfig c;
    c.header_size = static_cast<uint32_t>(net_header_size(features));
    c.mergeable = features.has(Feature::net_mrg_rxbuf);
    c.write_num_buffers = c.mergeable || features.has(Feature::version_1);
    c.calls_wanted = calls_wanted;
    return c;
}

}  // namespace vnet::virtio
