// The switch's MAC table: (VLAN, MAC) -> port, bounded in size. Slots are
// allocated once (open addressing, linear probing, twice the entries it
// may hold), so learning never allocates and a full table stays full: a new
// MAC is then not learned (counted table_full) and frames to it flood.
// Entries not refreshed for the aging time are forgotten, as the Linux
// bridge's ageing_time does: a lookup or a learn treats an expired entry as
// gone, and age() sweeps the rest. Time is whatever the caller passes (ns
// of a monotonic clock): tests drive it.
//
// Owned by one thread (the switch's worker); the control thread reads it
// only through that worker (Worker::run_sync). No locks.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dataplane/switch/switch_counters.hpp"
#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

class MacTable {
public:
    // `counters` receives learned, moved, aged and table_full.
    MacTable(uint32_t max_entries, uint64_t aging_ns, SwitchCounters& counters);

    // `mac` was seen as a source on `member`'s `vlan` at `now`. False when
    // a full table had no room for it (counted as table_full).
    bool learn(const packet::MacAddress& mac, uint16_t vlan, uint16_t member, uint64_t now);
    // lookup's answer for a MAC that is unknown or expired.
    static constexpr uint16_t kUnknown = UINT16_MAX;
    // The member `mac` was last seen on in `vlan`, or kUnknown. A plain
    // value, not an optional: GCC 12 returns std::optional<uint16_t>
    // through the stack, a store-forwarding stall per packet.
    uint16_t lookup(const packet::MacAddress& mac, uint16_t vlan, uint64_t now);
    // Forgets every expired entry.
    void age(uint64_t now);
    // Forgets the entries of `member` (a port left the switch); not counted as aged.
    void forget_member(uint16_t member);

    uint32_t size() const { return size_; }
    uint32_t max_entries() const { return max_entries_; }
    uint64_t aging_ns() const { return aging_ns_; }

    struct Entry {
        packet::MacAddress mac;
        uint16_t vlan;
        uint16_t member;
        uint64_t last_seen;
    };
    template <class F>
    void for_each(F&& f) const {
        for (const Slot& s : slots_) {
            if (s.used) {
                f(Entry{mac_of(s.key), vlan_of(s.key), s.member, s.last_seen});
            }
        }
    }

private:
    struct Slot {
        uint64_t key = 0;  // MAC in the low 48 bits, VLAN above
        uint64_t last_seen = 0;
        uint16_t member = 0;
        bool used = false;
    };
    static uint64_t key_of(const packet::MacAddress& mac, uint16_t vlan);
    static packet::MacAddress mac_of(uint64_t key);
    static uint16_t vlan_of(uint64_t key) { return static_cast<uint16_t>(key >> 48); }
    size_t home(uint64_t key) const;
    // The slot holding `key`, or the empty slot where it would go.
    size_t find(uint64_t key) const;
    bool expired(const Slot& s, uint64_t now) const { return now - s.last_seen >= aging_ns_; }
    // Empties slot i, shifting back the entries after it that probed past it.
    void erase_at(size_t i);

    uint32_t max_entries_;
    uint64_t aging_ns_;
    SwitchCounters& counters_;
    std::vector<Slot> slots_;
    size_t mask_;
    unsigned shift_;
    uint32_t size_ = 0;
};

}  // namespace vnet::dataplane::switching
