// The switch's MAC table: (VLAN, MAC) -> port, bounded in size. Slots are
// allocated once (open addressing, linear probing, twice the entries it
// may hold), so learning never allocates and a full table stays full: a new
// MAC is then not learned (counted table_full) and frames to it flood.
// Entries not refreshed for the aging time are forgotten, as the Linux
// bridge's ageing_time does: a lookup or a learn treats an expired entry as
// gone, and age() sweeps the rest. Time is whatever the caller passes (ns
// of a monotonic clock): tests drive it.
//
// A slot is 16 bytes: four share a cache line and none straddles two, so a
// learn or lookup reads one line, the one prefetch() asked for. (With
// 24-byte slots a quarter of the entries crossed a line, a second miss the
// prefetch did not cover: ~15 ns per frame with 10,000 MACs learned.) The
// member and the time share a word: members are fewer than kMaxMembers,
// and time keeps its low 56 bits, compared modulo 2^56 ns (834 days), which
// is exact for any age below that; aging is at most kMaxAgingNs and the
// switch sweeps once a second, so no entry lives that long.
//
// Owned by one thread (the switch's worker); the control thread reads it
// only through that worker (Worker::run_sync). No locks.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "dataplane/switch/mac_address.hpp"
#include "dataplane/switch/switch_counters.hpp"
#include "packet/wire.hpp"

namespace vnet::dataplane::switching {

class MacTable {
public:
    // Members are numbered below this (a slot keeps 8 bits of it).
    static constexpr uint16_t kMaxMembers = 256;
    // The longest aging time (a slot keeps 56 bits of time; see above).
    static constexpr uint64_t kMaxAgingNs = uint64_t{1} << 55;

    // `counters` receives learned, moved, aged and table_full. Throws
    // std::invalid_argument for an aging time of 0 or above kMaxAgingNs.
    MacTable(uint32_t max_entries, uint64_t aging_ns, SwitchCounters& counters);

    // What an entry is found by: the MAC in the low 48 bits (in memory
    // order), the VLAN's 12 bits above, and a top bit that tells a key from
    // a free slot. The switch computes it once per frame.
    using Key = uint64_t;
    static Key key_of(const packet::MacAddress& mac, uint16_t vlan) {
        return key_of(mac_bits(mac), vlan);
    }
    // The same from the address as mac_bits gives it.
    static Key key_of(uint64_t bits, uint16_t vlan) {
        return bits | Key{vlan & 0x0fffu} << 48 | kPresent;
    }

    // The MAC of `key` was seen as a source on `member` (< kMaxMembers) at
    // `now`. False when a full table had no room for it (counted as
    // table_full).
    bool learn(Key key, uint16_t member, uint64_t now) {
        // What nearly every frame does, inline: refresh its source's entry,
        // found in its home slot, on the member it was on, not expired (a
        // call and the probe loop cost a frame ~20 instructions with many
        // sources, switch-callgrind.sh "2 10000").
        Slot& home_slot = slots_[home(key)];
        if (home_slot.key == key && member_of(home_slot) == member && !expired(home_slot, now)) {
            home_slot.seen = seen_word(member, now);
            return true;
        }
        return learn_any(key, member, now);
    }
    bool learn(const packet::MacAddress& mac, uint16_t vlan, uint16_t member, uint64_t now) {
        return learn(key_of(mac, vlan), member, now);
    }
    // lookup's answer for a MAC that is unknown or expired.
    static constexpr uint16_t kUnknown = UINT16_MAX;
    // The member the MAC of `key` was last seen on, or kUnknown. A plain
    // value, not an optional: GCC 12 returns std::optional<uint16_t>
    // through the stack, a store-forwarding stall per packet.
    uint16_t lookup(Key key, uint64_t now);
    uint16_t lookup(const packet::MacAddress& mac, uint16_t vlan, uint64_t now) {
        return lookup(key_of(mac, vlan), now);
    }
    // Starts loading the slot where `key` would be found, so that a learn
    // or lookup soon after does not wait for memory.
    void prefetch(Key key) const { __builtin_prefetch(&slots_[home(key)]); }
    // Forgets every expired entry.
    void age(uint64_t now);
    // Forgets the entries of `member` (a port left the switch); not counted as aged.
    void forget_member(uint16_t member);
    // Forgets every entry (vnetctl mac flush); not counted as aged.
    void forget_all();
    // Forgets the entry of `key` (a remote MAC its control plane withdrew);
    // false if there was none. Not counted as aged.
    bool forget(Key key);

    uint32_t size() const { return size_; }
    uint32_t max_entries() const { return max_entries_; }
    uint64_t aging_ns() const { return aging_ns_; }

    struct Entry {
        packet::MacAddress mac;
        uint16_t vlan;
        uint16_t member;
        uint64_t age_ns;  // since it was last seen
    };
    // Every entry, expired or not (age() has not swept it yet), with its
    // age at `now`.
    template <class F>
    void for_each(uint64_t now, F&& f) const {
        for (const Slot& s : slots_) {
            if (s.key != kFree) {
                f(Entry{mac_of(s.key), vlan_of(s.key), member_of(s), age_of(s, now)});
            }
        }
    }

private:
    static constexpr Key kFree = 0;
    static constexpr Key kPresent = Key{1} << 63;
    static constexpr unsigned kTimeBits = 56;
    static constexpr uint64_t kTimeMask = (uint64_t{1} << kTimeBits) - 1;
    struct Slot {
        Key key = kFree;
        uint64_t seen = 0;  // last seen: time in the low 56 bits, the member above
    };
    static_assert(sizeof(Slot) == 16, "four slots to a cache line");
    static_assert(kMaxMembers <= uint64_t{1} << (64 - kTimeBits), "a member fits beside the time");
    static uint64_t seen_word(uint16_t member, uint64_t now) {
        return uint64_t{member} << kTimeBits | (now & kTimeMask);
    }
    static uint16_t member_of(const Slot& s) { return static_cast<uint16_t>(s.seen >> kTimeBits); }
    static uint64_t age_of(const Slot& s, uint64_t now) { return (now - s.seen) & kTimeMask; }
    static packet::MacAddress mac_of(Key key) {
        packet::MacAddress mac;
        const auto low = static_cast<uint32_t>(key);
        const auto high = static_cast<uint16_t>(key >> 32);
        std::memcpy(mac.data(), &low, sizeof low);
        std::memcpy(mac.data() + sizeof low, &high, sizeof high);
        return mac;
    }
    static uint16_t vlan_of(Key key) { return static_cast<uint16_t>(key >> 48 & 0x0fff); }
    // The slot where `key`'s probe starts. Fibonacci hashing: the top bits
    // of the product mix every key bit.
    size_t home(Key key) const {
        return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
    }
    // The slot holding `key`, or the free slot where it would go.
    size_t find(Key key) const;
    // learn() for every case: a probe past the home slot, a move, an
    // expired entry, a new one.
    bool learn_any(Key key, uint16_t member, uint64_t now);
    bool expired(const Slot& s, uint64_t now) const { return age_of(s, now) >= aging_ns_; }
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
