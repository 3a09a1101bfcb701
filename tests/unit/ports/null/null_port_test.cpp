// The discard port counts frame bytes the way the kernel does: without the
// virtio-net header, whichever size the packets' source negotiated.
#include <gtest/gtest.h>

#include "ports/null/null_port.hpp"

namespace vnet::ports {
namespace {

packet::PacketBurst burst_of(uint16_t header_size, std::initializer_list<uint32_t> lens) {
    packet::PacketBurst b;
    b.header_size = header_size;
    static uint8_t bytes[2048];
    for (uint32_t len : lens) {
        b.free_iovecs()[0] = iovec{bytes, len};
        b.push(1, len, 0);
    }
    return b;
}

TEST(NullPort, counts_frame_bytes_without_a_12_byte_header) {
    NullPort port("null");
    EXPECT_EQ(port.transmit_burst(0, burst_of(12, {76, 112})), 2);
    EXPECT_EQ(port.tx_counters(0).packets.get(), 2u);
    EXPECT_EQ(port.tx_counters(0).bytes.get(), 64u + 100u);
}

TEST(NullPort, counts_frame_bytes_without_a_legacy_10_byte_header) {
    NullPort port("null");
    EXPECT_EQ(port.transmit_burst(0, burst_of(10, {74})), 1);
    EXPECT_EQ(port.tx_counters(0).bytes.get(), 64u);
}

}  // namespace
}  // namespace vnet::ports
