#include "virtio/inflight/inflight_layout.hpp"

namespace vnet::virtio {

void init_split_inflight_region(QueueRegionSplit* region, uint16_t queue_size) {
    // A fresh memfd is zero: inflight 0, counters 0, used_idx 0 as a new ring's.
    region->features = 0;
    region->desc_num = queue_size;
    region->last_batch_head = 0;
    region->used_idx = 0;
    region->version = kInflightVersion;
}

}  // namespace vnet::virtio
