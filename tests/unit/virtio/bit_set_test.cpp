#include "virtio/bit_set.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace vnet::virtio {
namespace {

enum class Bit : uint8_t { a = 0, b = 3, high = 40 };
using Set = BitSet<Bit>;
using SmallSet = BitSet<Bit, uint8_t>;

TEST(BitSet, a_bit_number_becomes_its_mask) {
    EXPECT_EQ(Set::mask(Bit::b), 0x08u);
    EXPECT_EQ(Set::mask(Bit::high), uint64_t{1} << 40);
    EXPECT_EQ((Set{Bit::a, Bit::b}.bits()), 0x09u);
    EXPECT_EQ(SmallSet{Bit::b}.bits(), 0x08u);
}

TEST(BitSet, has_tests_the_bit_not_the_number_as_a_mask) {
    // Bit::b is 3: a mask-vs-bit slip would test bits 0 and 1.
    const Set s(0x03);
    EXPECT_FALSE(s.has(Bit::b));
    EXPECT_TRUE(s.has(Bit::a));
    EXPECT_TRUE(Set(0x08).has(Bit::b));
}

TEST(BitSet, with_without_and_the_set_operators) {
    const Set s = Set{}.with(Bit::a).with(Bit::high);
    EXPECT_TRUE(s.has(Bit::high));
    EXPECT_FALSE(s.without(Bit::high).has(Bit::high));
    EXPECT_TRUE(s.without(Bit::high).has(Bit::a));
    EXPECT_EQ((s & Set{Bit::a, Bit::b}), Set{Bit::a});
    EXPECT_EQ((Set{Bit::a} | Set{Bit::b}), (Set{Bit::a, Bit::b}));
    EXPECT_TRUE(Set{Bit::a}.is_subset_of(s));
    EXPECT_FALSE(Set{Bit::b}.is_subset_of(s));
    EXPECT_TRUE(Set{}.empty());
    EXPECT_FALSE(s.empty());
    EXPECT_EQ(SmallSet{Bit::b}.without(Bit::b), SmallSet{});
}

}  // namespace
}  // namespace vnet::virtio
