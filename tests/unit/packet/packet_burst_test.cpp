#include "packet/packet_burst.hpp"

#include <gtest/gtest.h>

namespace vnet::packet {
namespace {

TEST(PacketBurst, pop_front_keeps_the_rest_in_order_with_their_iovecs) {
    static PacketBurst burst;
    burst.clear();
    uint8_t a[1], b[2], c[3];
    uint8_t* bufs[] = {a, b, c};
    for (uint32_t i = 0; i < 3; ++i) {
        auto free = burst.free_iovecs();
        free[0] = iovec{bufs[i], i + 1};
        free[1] = iovec{bufs[i], i + 1};
        burst.push(2, 2 * (i + 1), 100 + i);
    }
    burst.pop_front(1);
    ASSERT_EQ(burst.count, 2);
    EXPECT_EQ(burst.iovecs_used, 4);
    EXPECT_EQ(burst.packets[0].token, 101u);
    EXPECT_EQ(burst.packet_iovecs(0)[0].iov_base, b);
    EXPECT_EQ(burst.packet_iovecs(1)[1].iov_base, c);
    EXPECT_EQ(burst.packet_iovecs(1)[1].iov_len, 3u);
    burst.pop_front(5);
    EXPECT_EQ(burst.count, 0);
    EXPECT_EQ(burst.iovecs_used, 0);
}

}  // namespace
}  // namespace vnet::packet
