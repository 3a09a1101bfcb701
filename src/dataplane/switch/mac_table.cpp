#include "dataplane/switch/mac_table.hpp"

#include <algorithm>
#include <bit>

namespace vnet::dataplane::switching {

MacTable::MacTable(uint32_t max_entries, uint64_t aging_ns, SwitchCounters& counters)
    : max_entries_(max_entries), aging_ns_(aging_ns), counters_(counters) {
    // At most half full: linear probes stay short.
    const size_t slots = std::bit_ceil(std::max<size_t>(16, size_t{max_entries} * 2));
    slots_.resize(slots);
    mask_ = slots - 1;
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots));
}

uint64_t MacTable::key_of(const packet::MacAddress& mac, uint16_t vlan) {
    uint64_t k = 0;
    for (uint8_t b : mac) {
        k = k << 8 | b;
    }
    return k | uint64_t{vlan} << 48;
}

packet::MacAddress MacTable::mac_of(uint64_t key) {
    packet::MacAddress mac;
    for (int i = 5; i >= 0; --i) {
        mac[static_cast<size_t>(i)] = static_cast<uint8_t>(key);
        key >>= 8;
    }
    return mac;
}

size_t MacTable::home(uint64_t key) const {
    // Fibonacci hashing: the top bits of the product mix every key bit.
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
}

size_t MacTable::find(uint64_t key) const {
    size_t i = home(key);
    while (slots_[i].used && slots_[i].key != key) {
        i = (i + 1) & mask_;
    }
    return i;
}

bool MacTable::learn(const packet::MacAddress& mac, uint16_t vlan, uint16_t member, uint64_t now) {
    const uint64_t key = key_of(mac, vlan);
    size_t i = find(key);
    if (slots_[i].used && expired(slots_[i], now)) {
        erase_at(i);
        counters_.aged.add(1);
        i = find(key);
    }
    Slot& s = slots_[i];
    if (s.used) {
        if (s.member != member) {
            s.member = member;
            counters_.moved.add(1);
        }
        s.last_seen = now;
        return true;
    }
    if (size_ >= max_entries_) {
        counters_.table_full.add(1);
        return false;
    }
    s = Slot{key, now, member, true};
    ++size_;
    counters_.learned.add(1);
    return true;
}

uint16_t MacTable::lookup(const packet::MacAddress& mac, uint16_t vlan, uint64_t now) {
    const size_t i = find(key_of(mac, vlan));
    if (!slots_[i].used) {
        return kUnknown;
    }
    if (expired(slots_[i], now)) {
        erase_at(i);
        counters_.aged.add(1);
        return kUnknown;
    }
    return slots_[i].member;
}

void MacTable::age(uint64_t now) {
    for (size_t i = 0; i < slots_.size();) {
        if (slots_[i].used && expired(slots_[i], now)) {
            erase_at(i);
            counters_.aged.add(1);
            continue;  // erase_at may have shifted another entry into slot i
        }
        ++i;
    }
}

void MacTable::forget_member(uint16_t member) {
    for (size_t i = 0; i < slots_.size();) {
        if (slots_[i].used && slots_[i].member == member) {
            erase_at(i);
            continue;
        }
        ++i;
    }
}

// Backward-shift deletion (Knuth 6.4, Algorithm R): no tombstones, so a
// table that learns and ages forever never fills up with dead slots.
void MacTable::erase_at(size_t i) {
    --size_;
    size_t j = i;
    for (;;) {
        slots_[i].used = false;
        for (;;) {
            j = (j + 1) & mask_;
            if (!slots_[j].used) {
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
