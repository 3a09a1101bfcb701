#include "dataplane/switch/frame_parser.hpp"

#include <gtest/gtest.h>

#include "switch_frames.hpp"

namespace vnet::dataplane::switching {
namespace {

using test::frame;
using test::kHeader;
using test::mac;

TEST(FrameParser, reads_addresses_and_tag_across_tiny_iovecs) {
    std::vector<uint8_t> f = frame(mac(2), mac(1), 0x2064);
    std::vector<iovec> iov;
    for (uint8_t& b : f) {
        iov.push_back(iovec{&b, 1});
    }
    L2Frame parsed;
    ASSERT_TRUE(parse_l2_frame(iov, static_cast<uint32_t>(f.size()), kHeader, parsed));
    EXPECT_EQ(parsed.destination, mac(2));
    EXPECT_EQ(parsed.source, mac(1));
    EXPECT_TRUE(parsed.tagged);
    EXPECT_EQ(parsed.tci, 0x2064);
    EXPECT_EQ(parsed.ethertype, 0x0800);
}

TEST(FrameParser, the_packet_length_bounds_what_is_read_not_the_buffer) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), f.size()};
    L2Frame parsed;
    EXPECT_FALSE(parse_l2_frame({&iov, 1}, kHeader + 13, kHeader, parsed));
    EXPECT_TRUE(parse_l2_frame({&iov, 1}, kHeader + 14, kHeader, parsed));
}

TEST(FrameParser, a_chain_shorter_than_the_length_it_claims_is_too_short) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), kHeader + 10};
    L2Frame parsed;
    EXPECT_FALSE(parse_l2_frame({&iov, 1}, static_cast<uint32_t>(f.size()), kHeader, parsed));
}

TEST(FrameParser, a_header_larger_than_virtio_net_has_is_refused) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), f.size()};
    L2Frame parsed;
    EXPECT_FALSE(parse_l2_frame({&iov, 1}, static_cast<uint32_t>(f.size()), 13, parsed));
}

}  // namespace
}  // namespace vnet::dataplane::switching
