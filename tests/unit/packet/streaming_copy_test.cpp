#include "packet/streaming_copy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "packet/iovec.hpp"

namespace vnet::packet {
namespace {

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(i * 7 + 3);
    }
    return v;
}

// Every head alignment and every tail length around the 16-byte stores and
// the 64-byte rounds, and the plain-copy size below them: exactly the bytes
// asked for, nothing before or after touched.
TEST(StreamingCopy, copies_exactly_n_bytes_at_any_alignment) {
    const std::vector<uint8_t> src = pattern(5000);
    for (size_t dst_offset = 0; dst_offset < 17; ++dst_offset) {
        for (size_t src_offset : {size_t{0}, size_t{1}, size_t{13}}) {
            for (size_t n : {size_t{0}, size_t{1}, size_t{255}, size_t{256}, size_t{257},
                             size_t{319}, size_t{4096}, size_t{4099}}) {
                std::vector<uint8_t> dst(n + 64, 0xee);
                streaming_copy(dst.data() + dst_offset, src.data() + src_offset, n);
                streaming_copy_fence();
                for (size_t i = 0; i < dst.size(); ++i) {
                    const bool inside = i >= dst_offset && i < dst_offset + n;
                    ASSERT_EQ(dst[i], inside ? src[src_offset + i - dst_offset] : 0xee)
                        << "dst_offset " << dst_offset << " src_offset " << src_offset << " n " << n
                        << " byte " << i;
                }
            }
        }
    }
}

// A 64 KB frame from a chain of uneven pieces into 2 KB mergeable buffers,
// as a GSO frame goes VM -> VM: the same bytes and count as copy_iovecs,
// stopping where the shorter side ends.
TEST(StreamingCopy, iovec_copy_matches_the_plain_one) {
    const std::vector<uint8_t> frame = pattern(65000);
    std::vector<iovec> src;
    for (size_t at = 0, piece = 1; at < frame.size(); at += piece, piece = piece * 3 + 5) {
        piece = std::min(piece, frame.size() - at);
        src.push_back(iovec{const_cast<uint8_t*>(frame.data() + at), piece});
    }
    std::vector<uint8_t> plain(66 * 1024), streamed(66 * 1024);
    std::vector<iovec> plain_dst, streamed_dst;
    for (size_t at = 0; at < plain.size(); at += 2048) {
        plain_dst.push_back(iovec{plain.data() + at, 2048});
        streamed_dst.push_back(iovec{streamed.data() + at, 2048});
    }
    EXPECT_EQ(copy_iovecs_streaming(streamed_dst, src, frame.size()), frame.size());
    EXPECT_EQ(copy_iovecs(plain_dst, src, frame.size()), frame.size());
    EXPECT_EQ(streamed, plain);
    EXPECT_TRUE(std::equal(frame.begin(), frame.end(), streamed.begin()));

    const std::array<iovec, 1> short_dst{iovec{streamed.data(), 3000}};
    EXPECT_EQ(copy_iovecs_streaming(short_dst, src, frame.size()), 3000u);
}

}  // namespace
}  // namespace vnet::packet
