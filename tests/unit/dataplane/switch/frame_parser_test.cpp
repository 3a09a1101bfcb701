#include "dataplane/switch/frame_parser.hpp"

#include <gtest/gtest.h>

#include <algorithm>

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
    L2Prefix prefix;
    ASSERT_TRUE(parse_l2_frame(iov, static_cast<uint32_t>(f.size()), kHeader, parsed, prefix));
    EXPECT_EQ(parsed.destination, mac_bits(mac(2)));
    EXPECT_EQ(parsed.source, mac_bits(mac(1)));
    EXPECT_TRUE(parsed.tagged);
    EXPECT_EQ(parsed.tci, 0x2064);
    EXPECT_EQ(parsed.ethertype, 0x0800);
    // The copy it parsed from is the packet's first bytes: header, MACs, tag, type.
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), f.begin()));
}

TEST(FrameParser, the_packet_length_bounds_what_is_read_not_the_buffer) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), f.size()};
    L2Frame parsed;
    L2Prefix prefix;
    EXPECT_FALSE(parse_l2_frame({&iov, 1}, kHeader + 13, kHeader, parsed, prefix));
    EXPECT_TRUE(parse_l2_frame({&iov, 1}, kHeader + 14, kHeader, parsed, prefix));
}

TEST(FrameParser, a_chain_shorter_than_the_length_it_claims_is_too_short) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), kHeader + 10};
    L2Frame parsed;
    L2Prefix prefix;
    EXPECT_FALSE(
        parse_l2_frame({&iov, 1}, static_cast<uint32_t>(f.size()), kHeader, parsed, prefix));
}

// A first descriptor that holds every byte the parser may want is copied
// in one constant-size move: the same answer as the byte-by-byte walk for
// every length the packet claims, tagged or not, 10- or 12-byte header.
TEST(FrameParser, one_descriptor_and_tiny_iovecs_give_the_same_answer_at_every_length) {
    for (const uint16_t header : {uint16_t{10}, uint16_t{12}}) {
        for (const std::optional<uint16_t> tci :
             {std::optional<uint16_t>{}, std::optional<uint16_t>{0x2064}}) {
            std::vector<uint8_t> f = frame(mac(2), mac(1), tci);
            f.erase(f.begin(), f.begin() + (kHeader - header));
            std::vector<iovec> bytes;
            for (uint8_t& b : f) {
                bytes.push_back(iovec{&b, 1});
            }
            const iovec whole{f.data(), f.size()};
            for (uint32_t len = 0; len <= 34; ++len) {
                L2Frame fast, walked;
                L2Prefix fast_prefix, walked_prefix;
                const bool fast_ok = parse_l2_frame({&whole, 1}, len, header, fast, fast_prefix);
                ASSERT_EQ(fast_ok, parse_l2_frame(bytes, len, header, walked, walked_prefix))
                    << "header " << header << " tagged " << tci.has_value() << " len " << len;
                if (fast_ok) {
                    EXPECT_TRUE(same_l2_header(fast, walked)) << len;
                    // Both copies hold the bytes the frame leaves with.
                    const size_t sent = header + 14 + (tci ? 4 : 0);
                    EXPECT_TRUE(std::equal(fast_prefix.begin(), fast_prefix.begin() + sent,
                                           walked_prefix.begin()))
                        << len;
                    EXPECT_TRUE(
                        std::equal(fast_prefix.begin(), fast_prefix.begin() + sent, f.begin()))
                        << len;
                }
            }
        }
    }
}

TEST(FrameParser, a_header_larger_than_virtio_net_has_is_refused) {
    std::vector<uint8_t> f = frame(mac(2), mac(1));
    iovec iov{f.data(), f.size()};
    L2Frame parsed;
    L2Prefix prefix;
    EXPECT_FALSE(parse_l2_frame({&iov, 1}, static_cast<uint32_t>(f.size()), 13, parsed, prefix));
}

}  // namespace
}  // namespace vnet::dataplane::switching
