#include "virtio/inflight/packed_inflight.hpp"

#include <algorithm>
#include <utility>

#include "virtio/ring/shared_access.hpp"

namespace vnet::virtio {
namespace {

using shared::load_acquire;
using shared::load_relaxed;
using shared::store_release;

// used_idx, old_used_idx, used_wrap_counter, old_used_wrap_counter and two
// padding bytes: bytes 16..23 of the header, one aligned little-endian word.
static_assert(offsetof(QueueRegionPacked, used_idx) % 8 == 0);

uint64_t* used_word(QueueRegionPacked* region) {
    return reinterpret_cast<uint64_t*>(&region->used_idx);
}

uint64_t encode_used_word(PackedPosition now, PackedPosition old) {
    return uint64_t{now.index} | uint64_t{old.index} << 16 | uint64_t{now.wrap ? 1u : 0u} << 32 |
           uint64_t{old.wrap ? 1u : 0u} << 40;
}

}  // namespace

PackedInflight::PackedInflight(QueueRegionPacked* region, uint16_t size)
    : region_(region), desc_(packed_inflight_descs(region)), size_(size) {}

void PackedInflight::store_used_word(PackedPosition now, PackedPosition old) {
    store_release(*used_word(region_), encode_used_word(now, old));
}

PackedInflight::TakeResult PackedInflight::take(const PackedDesc* ring, PackedPosition head,
                                                uint16_t slots, uint16_t id) {
    // virtio 1.2 §2.8.22: an id is the driver's until the device uses it; two chains in flight
    // with one id would make the used descriptor ambiguous.
    if (id_entry_[id] != kNone) [[unlikely]] {
        return TakeResult::id_in_flight;
    }
    if (free_count_ < slots) [[unlikely]] {
        return TakeResult::no_free_entry;  // the ring caps what is in flight at its size
    }
    // vhost-user.rst "When receiving available buffers", per descriptor. free_head_ is
    // old_free_head here: the free-list pushes of a burst wait for prepare_publish.
    const uint16_t e = free_head_;
    uint16_t at = free_head_;
    PackedPosition pos = head;
    for (uint16_t i = 0; i < slots; ++i) {
        const PackedDesc& d = ring[pos.index];
        if (i == 0) {
            store_release(desc_[e].num, uint16_t{0});
            store_release(desc_[e].counter, ++counter_);
            store_release(desc_[e].inflight, uint8_t{1});
        }
        if (i + 1 == slots) {
            store_release(desc_[e].last, at);
            last_[e] = at;
        }
        store_release(desc_[e].num, static_cast<uint16_t>(i + 1));
        store_release(desc_[at].addr, load_relaxed(d.addr));
        store_release(desc_[at].len, load_relaxed(d.len));
        store_release(desc_[at].flags, load_relaxed(d.flags));
        store_release(desc_[at].id, load_relaxed(d.id));
        at = next_[at];  // < size_ but for the list's end, which free_count_ keeps us off
        store_release(region_->free_head, at);
        pos = advance(pos, 1, size_);
    }
    // The chain is in flight from this store on; before it, recovery rolls it back.
    store_release(region_->old_free_head, at);
    free_head_ = at;
    free_count_ = static_cast<uint16_t>(free_count_ - slots);
    num_[e] = slots;
    id_of_[e] = id;
    id_entry_[id] = e;
    taken_[taken_end_] = e;
    taken_end_ = static_cast<uint16_t>(taken_end_ + 1 == size_ ? 0 : taken_end_ + 1);
    taken_count_ = static_cast<uint16_t>(std::min<uint32_t>(taken_count_ + 1u, size_));
    return TakeResult::ok;
}

void PackedInflight::push_free(uint16_t entry) {
    const uint16_t last = last_[entry];
    store_release(desc_[last].next, free_head_);
    next_[last] = free_head_;
    free_head_ = entry;
    free_count_ = static_cast<uint16_t>(free_count_ + num_[entry]);
}

void PackedInflight::give_back(uint32_t slots) {
    // Newest first, so what stays in flight is always a prefix of what was taken: recovery
    // places the chains it resubmits in front of the first slot nobody took.
    while (slots > 0 && taken_count_ > 0) {
        taken_end_ = static_cast<uint16_t>(taken_end_ == 0 ? size_ - 1 : taken_end_ - 1);
        --taken_count_;
        const uint16_t e = taken_[taken_end_];
        push_free(e);
        store_release(region_->free_head, e);
        // The give-back happens here; a crash after it finds the entries free, in flight or
        // not (recovery clears the free list's inflight flags).
        store_release(region_->old_free_head, e);
        store_release(desc_[e].inflight, uint8_t{0});
        id_entry_[id_of_[e]] = kNone;
        slots -= std::min<uint32_t>(slots, num_[e]);
    }
}

void PackedInflight::prepare_publish(PackedPosition used) {
    // vhost-user.rst "When supplying the used buffers", steps 3-4 for each chain of the
    // burst, then used_idx and used_wrap_counter (one store, see the header).
    for (uint16_t i = 0; i < staged_count_; ++i) {
        push_free(staged_[i]);
    }
    store_release(region_->free_head, free_head_);
    store_used_word(used, used_);
    used_ = used;  // old_used_* still hold the previous position until published()
}

void PackedInflight::published() {
    // After the burst head's flags: inflight = 0 per head, then the old_* fields. A crash
    // before the last store is seen as used != old_used with the burst head used: commit.
    for (uint16_t i = 0; i < staged_count_; ++i) {
        store_release(desc_[staged_[i]].inflight, uint8_t{0});
    }
    staged_count_ = 0;
    store_release(region_->old_free_head, free_head_);
    store_used_word(used_, used_);
}

InflightError PackedInflight::recover(PackedDesc* ring, PackedPosition base_used, bool fresh,
                                      PackedResume* resume) {
    *resume = PackedResume{};
    next_.assign(size_, 0);
    num_.assign(size_, 0);
    last_.assign(size_, 0);
    id_of_.assign(size_, 0);
    id_entry_.assign(size_, kNone);
    staged_.assign(size_, 0);
    staged_count_ = 0;
    taken_.assign(size_, 0);
    taken_end_ = 0;
    taken_count_ = 0;
    counter_ = 0;
    const uint16_t version = load_relaxed(region_->version);
    if (version == 0 || fresh) {
        // Hostile-input: a front end may hand a buffer it zeroed itself. Nothing was taken
        // through this region yet, so the vring base says where the ring is.
        init_packed_inflight_region(region_, size_);
        store_used_word(base_used, base_used);
        for (uint16_t i = 0; i < size_; ++i) {
            next_[i] = static_cast<uint16_t>(i + 1);
        }
        free_head_ = 0;
        free_count_ = size_;
        used_ = base_used;
        resume->used = base_used;
        resume->from_base = true;
        return InflightError::ok;
    }
    if (version != kInflightVersion) {
        return InflightError::version_unknown;
    }
    if (load_relaxed(region_->desc_num) != size_) {
        return InflightError::size_mismatch;
    }
    // One load of each header field: the front end maps the region too.
    const uint16_t free_head = load_relaxed(region_->free_head);
    const uint16_t old_free_head = load_relaxed(region_->old_free_head);
    const uint64_t word = load_relaxed(*used_word(region_));
    const auto now_idx = static_cast<uint16_t>(word);
    const auto old_idx = static_cast<uint16_t>(word >> 16);
    const auto now_wrap = static_cast<uint8_t>(word >> 32);
    const auto old_wrap = static_cast<uint8_t>(word >> 40);
    // desc_num ends the free list, so it is a valid head (an empty list); more is not.
    if (free_head > size_ || old_free_head > size_) {
        return InflightError::free_head_out_of_range;
    }
    if (now_idx >= size_ || old_idx >= size_ || now_wrap > 1 || old_wrap > 1) {
        return InflightError::used_index_out_of_range;
    }
    const PackedPosition now{now_idx, now_wrap != 0};
    const PackedPosition old{old_idx, old_wrap != 0};
    // "When reconnecting", step 1: a publish that did not finish. If the descriptor at
    // old_used_idx shows used for old_used_wrap_counter, the driver may have seen the burst:
    // commit it. Otherwise step 2 rolls it back.
    uint16_t head = old_free_head;
    PackedPosition used = old;
    // acquire: like pop's load of a head; it decides whether the burst was published.
    if (now != old && is_used(load_acquire(ring[old.index].flags), old.wrap)) {
        head = free_head;
        used = now;
    }
    store_release(region_->free_head, head);
    store_release(region_->old_free_head, head);
    store_used_word(used, used);
    // Step 3: every entry on the free list is not in flight. Links copied once, checked here.
    for (uint16_t i = 0; i < size_; ++i) {
        next_[i] = load_relaxed(desc_[i].next);
    }
    enum : uint8_t { kUnseen, kFree, kChain };
    std::vector<uint8_t> owner(size_, kUnseen);
    uint16_t free_count = 0;
    for (uint16_t at = head; at != size_; at = next_[at]) {
        if (at > size_ || owner[at] != kUnseen) {
            return InflightError::free_list_invalid;  // leaves the table, or loops
        }
        owner[at] = kFree;
        store_release(desc_[at].inflight, uint8_t{0});
        ++free_count;
    }
    // Step 4: the chains still in flight, each checked entry by entry and copied.
    struct Taken {
        uint64_t counter;
        uint16_t entry;
        bool operator<(const Taken& o) const {
            return counter != o.counter ? counter < o.counter : entry < o.entry;
        }
    };
    std::vector<Taken> taken;
    for (uint16_t e = 0; e < size_; ++e) {
        if (owner[e] == kUnseen && load_relaxed(desc_[e].inflight) != 0) {
            taken.push_back(Taken{load_relaxed(desc_[e].counter), e});
        }
    }
    std::sort(taken.begin(), taken.end());
    uint32_t offset = 0;
    for (const Taken& t : taken) {
        const uint16_t num = load_relaxed(desc_[t.entry].num);
        const uint16_t last = load_relaxed(desc_[t.entry].last);
        if (num == 0 || num > size_) {
            return InflightError::chain_invalid;
        }
        PackedResume::Chain chain;
        chain.num = num;
        chain.first = static_cast<uint32_t>(resume->descs.size());
        chain.offset = offset;
        uint16_t at = t.entry;
        uint16_t id = 0;
        for (uint16_t k = 0; k < num; ++k) {
            if (k != 0) {
                at = next_[at];
            }
            if (at >= size_) {
                return InflightError::chain_invalid;
            }
            if (owner[at] != kUnseen) {
                return InflightError::chains_overlap;
            }
            owner[at] = kChain;
            resume->descs.push_back(PackedResume::Desc{load_relaxed(desc_[at].addr),
                                                       load_relaxed(desc_[at].len),
                                                       load_relaxed(desc_[at].flags)});
            id = load_relaxed(desc_[at].id);  // virtio 1.2 §2.8.6: the last one's counts
        }
        if (at != last) {
            return InflightError::chain_invalid;
        }
        // virtio 1.2 §2.8.22: ids are < Queue Size, one chain each
        if (id >= size_ || id_entry_[id] != kNone) {
            return InflightError::id_invalid;
        }
        chain.id = id;
        num_[t.entry] = num;
        last_[t.entry] = last;
        id_of_[t.entry] = id;
        id_entry_[id] = t.entry;
        counter_ = std::max(counter_, t.counter);
        offset += num;
        resume->chains.push_back(chain);
    }
    // Ours never lose an entry (see the store orders above); a region that does would run
    // out of entries at some later take.
    if (std::find(owner.begin(), owner.end(), kUnseen) != owner.end()) {
        return InflightError::entries_lost;
    }
    free_head_ = head;
    free_count_ = free_count;
    used_ = used;
    resume->used = used;
    resume->slots = offset;
    // The resubmitted chains take the slots from `used` on: none may still show a used
    // descriptor the dead back end wrote and never published (see the header).
    PackedPosition pos = used;
    for (uint32_t k = 0; k < offset; ++k) {
        PackedDesc& d = ring[pos.index];
        const uint16_t flags = load_relaxed(d.flags);
        if (is_used(flags, pos.wrap)) {
            constexpr uint16_t kBits = PackedDesc::kFlagAvail | PackedDesc::kFlagUsed;
            store_release(d.flags,
                          static_cast<uint16_t>((flags & ~kBits) | avail_flags_for(pos.wrap)));
        }
        pos = advance(pos, 1, size_);
    }
    return InflightError::ok;
}

}  // namespace vnet::virtio
