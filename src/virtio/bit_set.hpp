// A typed set of negotiated bits: each enum value is a bit number, so a bit
// is never tested as if it were a mask (libvhost-user's mask-vs-bit slip).
// One template for every such set in the tree: virtio feature bits, vhost-user
// protocol features, TUN_F_* offloads. It lives in virtio/ because feature
// negotiation is virtio's vocabulary and every user (vhost_user/, ports/)
// already sits above virtio/, which is pure and depends on nothing.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace vnet::virtio {

template <typename Bit, typename Word = uint64_t>
class BitSet {
    static_assert(std::is_enum_v<Bit>);
    static_assert(std::is_unsigned_v<Word>);

public:
    constexpr BitSet() = default;
    constexpr explicit BitSet(Word bits) : bits_(bits) {}
    constexpr BitSet(std::initializer_list<Bit> bits) {
        for (Bit b : bits) {
            bits_ |= mask(b);
        }
    }

    static constexpr Word mask(Bit b) { return Word{1} << static_cast<unsigned>(b); }

    constexpr bool has(Bit b) const { return (bits_ & mask(b)) != 0; }
    constexpr Word bits() const { return bits_; }
    constexpr bool empty() const { return bits_ == 0; }
    constexpr bool is_subset_of(BitSet other) const { return (bits_ & ~other.bits_) == 0; }

    constexpr BitSet with(Bit b) const { return BitSet(static_cast<Word>(bits_ | mask(b))); }
    constexpr BitSet without(Bit b) const { return BitSet(static_cast<Word>(bits_ & ~mask(b))); }
    constexpr BitSet operator&(BitSet o) const {
        return BitSet(static_cast<Word>(bits_ & o.bits_));
    }
    constexpr BitSet operator|(BitSet o) const {
        return BitSet(static_cast<Word>(bits_ | o.bits_));
    }
    constexpr bool operator==(const BitSet&) const = default;

private:
    Word bits_ = 0;
};

}  // namespace vnet::virtio
