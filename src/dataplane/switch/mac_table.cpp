#include "dataplane/switch/mac_table.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace vnet::dataplane::switching {

MacTable::MacTable(uint32_t max_entries, uint64_t aging_ns, SwitchCounters& counters)
    : max_entries_(max_entries), aging_ns_(aging_ns), counters_(counters) {
    if (aging_ns == 0 || aging_ns > kMaxAgingNs) {
        throw std::invalid_argument("MAC aging time of " + std::to_string(aging_ns) +
                                    " ns is outside 1.." + std::to_string(kMaxAgingNs));
    }
    // At most half full: linear probes stay short.
    const size_t slots = std::bit_ceil(std::max<size_t>(16, size_t{max_entries} * 2));
    slots_.resize(slots);
    mask_ = slots - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots));
}

size_t MacTable::find(Key key) const {
    size_t i = home(key);
    while (slots_[i].key != kFree && slots_[i].key != key) {
        i = (i + 1) & mask_;
    }
    return i;
}

bool MacTable::learn_any(Key key, uint16_t member, uint64_t now) {
    size_t i = find(key);
    if (slots_[i].key != kFree && expired(slots_[i], now)) {
        erase_at(i);
        counters_.aged.add(1);
        i = find(key);
    }
    Slot& s = slots_[i];
    if (s.key != kFree) {
        if (member_of(s) != member) {
            counters_.moved.add(1);
        }
        s.seen = seen_word(member, now);
        return true;
    }
    if (size_ >= max_entries_) {
        counters_.table_full.add(1);
        return false;
    }
    s = Slot{key, seen_word(member, now)};
    ++size_;
    counters_.learned.add(1);
    return true;
}

uint16_t MacTable::lookup(Key key, uint64_t now) {
    const size_t i = find(key);
    if (slots_[i].key == kFree) {
        return kUnknown;
    }
    if (expired(slots_[i], now)) {
        erase_at(i);
        counters_.aged.add(1);
        return kUnknown;
    }
    return member_of(slots_[i]);
}

void MacTable::age(uint64_t now) {
    for (size_t i = 0; i < slots_.size();) {
        if (slots_[i].key != kFree && expired(slots_[i], now)) {
            erase_at(i);
            counters_.aged.add(1);
            continue;  // erase_at may have shifted another entry into slot i
        }
        ++i;
    }
}

void MacTable::forget_member(uint16_t member) {
    for (size_t i = 0; i < slots_.size();) {
        if (slots_[i].key != kFree && member_of(slots_[i]) == member) {
            erase_at(i);
            continue;
        }
        ++i;
    }
}

bool MacTable::forget(Key key) {
    const size_t i = find(key);
    if (slots_[i].key == kFree) {
        return false;
    }
    erase_at(i);
    return true;
}

void MacTable::forget_all() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    size_ = 0;
}

// Backward-shift deletion (Knuth 6.4, Algorithm R): no tombstones, so a
// table that learns and ages forever never fills up with dead slots.
void MacTable::erase_at(size_t i) {
    --size_;
    size_t j = i;
    for (;;) {
        slots_[i].key = kFree;
        for (;;) {
            j = (j + 1) & mask_;
            if (slots_[j].key == kFree) {
                return;
            }
            const size_t k = home(slots_[j].key);
            // Entry j may fill the hole at i unless its home lies cyclically in (i, j].
            const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (!stays) {
                break;
            }
        }
        slots_[i] = slots_[j];
        i = j;
    }
}

}  // namespace vnet::dataplane::switching
