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

void init_packed_inflight_region(QueueRegionPacked* region, uint16_t queue_size) {
    DescStatePacked* desc = packed_inflight_descs(region);
    for (uint16_t i = 0; i < queue_size; ++i) {
        desc[i].inflight = 0;
        desc[i].next = static_cast<uint16_t>(i + 1);
    }
    region->features = 0;
    region->desc_num = queue_size;
    region->free_head = 0;
    region->old_free_head = 0;
    region->used_idx = 0;
    region->old_used_idx = 0;
    region->used_wrap_counter = 1;
    region->old_used_wrap_counter = 1;
    region->version = kInflightVersion;
}

}  // namespace vnet::virtio
