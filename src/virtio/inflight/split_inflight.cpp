#include "virtio/inflight/split_inflight.hpp"

#include <algorithm>
#include <utility>

namespace vnet::virtio {

using shared::load_relaxed;
using shared::store_relaxed;
using shared::store_release;

const char* to_string(InflightError e) {
    switch (e) {
        case InflightError::ok:
            return "ok";
        case InflightError::version_unknown:
            return "inflight region version unknown";
        case InflightError::size_mismatch:
            return "inflight region desc_num differs from the queue size";
        case InflightError::batch_too_long:
            return "inflight region last batch longer than the queue";
        case InflightError::batch_list_invalid:
            return "inflight region last-batch list leaves the table";
        case InflightError::free_head_out_of_range:
            return "inflight region free_head beyond desc_num";
        case InflightError::used_index_out_of_range:
            return "inflight region used index or wrap counter out of range";
        case InflightError::free_list_invalid:
            return "inflight region free list leaves the table or loops";
        case InflightError::chain_invalid:
            return "inflight region chain's num, next or last out of range";
        case InflightError::chains_overlap:
            return "inflight region entry in two chains or in a chain and the free list";
        case InflightError::id_invalid:
            return "inflight region chain's buffer id out of range or repeated";
        case InflightError::entries_lost:
            return "inflight region entries neither free nor in flight";
    }
    return "inflight region invalid";
}

void SplitInflight::published(uint16_t used_idx) {
    // vhost-user.rst: after used->idx, clear inflight of each head of the
    // batch, then record used_idx. A crash before the last store is seen on
    // reconnect as used_idx != used->idx, and the batch list is replayed.
    uint16_t head = last_batch_head_;
    for (uint16_t i = 0; i < batch_; ++i) {
        store_relaxed(desc_[head].inflight, uint8_t{0});
        head = load_relaxed(desc_[head].next);  // ours: written by add_used, < size
    }
    batch_ = 0;
    store_release(region_->used_idx, used_idx);
}

InflightError SplitInflight::recover(uint16_t ring_used_idx, std::vector<uint16_t>* resume) {
    resume->clear();
    const uint16_t version = load_relaxed(region_->version);
    if (version == 0) {
        // Hostile-input: the front end may hand a buffer it zeroed itself.
        for (uint16_t i = 0; i < size_; ++i) {
            store_relaxed(desc_[i].inflight, uint8_t{0});
        }
        init_split_inflight_region(region_, size_);
        store_relaxed(region_->used_idx, ring_used_idx);
        return InflightError::ok;
    }
    if (version != kInflightVersion) {
        return InflightError::version_unknown;
    }
    if (load_relaxed(region_->desc_num) != size_) {
        return InflightError::size_mismatch;
    }
    // vhost-user.rst "When reconnecting", step 1: a publish whose inflight
    // clearing did not finish.
    const auto batch = static_cast<uint16_t>(ring_used_idx - load_relaxed(region_->used_idx));
    if (batch > size_) {
        return InflightError::batch_too_long;
    }
    uint16_t head = load_relaxed(region_->last_batch_head);
    for (uint16_t i = 0; i < batch; ++i) {
        if (head >= size_) {
            return InflightError::batch_list_invalid;
        }
        store_relaxed(desc_[head].inflight, uint8_t{0});
        head = load_relaxed(desc_[head].next);
    }
    store_release(region_->used_idx, ring_used_idx);
    // Step 2: what is still in flight, in the order it was taken. The
    // counters are copied first: the front end maps the region too, and a
    // sort must not see them change.
    counter_ = 0;
    std::vector<std::pair<uint64_t, uint16_t>> taken;
    for (uint16_t i = 0; i < size_; ++i) {
        const uint64_t c = load_relaxed(desc_[i].counter);
        counter_ = std::max(counter_, c);
        if (load_relaxed(desc_[i].inflight) != 0) {
            taken.emplace_back(c, i);
        }
    }
    std::sort(taken.begin(), taken.end());
    for (const auto& [c, i] : taken) {
        resume->push_back(i);
    }
    last_batch_head_ = load_relaxed(region_->last_batch_head);
    batch_ = 0;
    return InflightError::ok;
}

}  // namespace vnet::virtio
