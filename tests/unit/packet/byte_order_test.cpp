#include "packet/byte_order.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

namespace vnet::packet {
namespace {

TEST(ByteOrder, big_endian_puts_the_high_byte_first_at_any_alignment) {
    uint8_t b[9]{};
    store_be16(b + 1, 0x1234);
    EXPECT_EQ(b[1], 0x12);
    EXPECT_EQ(b[2], 0x34);
    EXPECT_EQ(load_be16(b + 1), 0x1234);
    store_be32(b + 3, 0xc6120001);
    EXPECT_EQ(b[3], 0xc6);
    EXPECT_EQ(b[6], 0x01);
    EXPECT_EQ(load_be32(b + 3), 0xc6120001u);
}

TEST(ByteOrder, little_endian_puts_the_low_byte_first) {
    std::byte b[9]{};
    store_le16(b + 1, 0x1234);
    EXPECT_EQ(b[1], std::byte{0x34});
    EXPECT_EQ(load_le16(b + 1), 0x1234);
    store_le64(b + 1, 0x0102030405060708ull);
    EXPECT_EQ(b[1], std::byte{0x08});
    EXPECT_EQ(b[8], std::byte{0x01});
    EXPECT_EQ(load_le64(b + 1), 0x0102030405060708ull);
}

}  // namespace
}  // namespace vnet::packet
