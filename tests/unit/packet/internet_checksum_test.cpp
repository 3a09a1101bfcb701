#include "packet/internet_checksum.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace vnet::packet {
namespace {

// RFC 1071 read literally: 16-bit big-endian words, one at a time.
uint16_t naive_checksum_fold(const uint8_t* p, size_t len, uint32_t seed) {
    uint64_t sum = seed;
    for (size_t i = 0; i < len; i += 2) {
        sum += uint32_t{p[i]} << 8 | (i + 1 < len ? p[i + 1] : 0);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(sum);
}

TEST(InternetChecksum, matches_the_rfc_1071_example) {
    // RFC 1071 §3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2, checksum 220d.
    const uint8_t bytes[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
    EXPECT_EQ(checksum_add(0, bytes, sizeof bytes), 0xddf2);
    EXPECT_EQ(checksum_finish(checksum_add(0, bytes, sizeof bytes)), 0x220d);
}

TEST(InternetChecksum, pads_an_odd_trailing_byte_with_zero) {
    const uint8_t bytes[] = {0x12, 0x34, 0x56};
    EXPECT_EQ(checksum_add(0, bytes, 3), 0x1234 + 0x5600);
    EXPECT_EQ(checksum_add(0, bytes, 1), 0x1200);
    EXPECT_EQ(checksum_add(7, bytes, 0), 7);
}

TEST(InternetChecksum, a_valid_ipv4_header_sums_to_all_ones) {
    // A real header (Wikipedia's example): checksum b861.
    const uint8_t ip[kIpv4HeaderLen] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                        0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    EXPECT_EQ(checksum_fold(checksum_add(0, ip, sizeof ip)), 0xffff);
    uint8_t zeroed[kIpv4HeaderLen];
    std::copy(std::begin(ip), std::end(ip), zeroed);
    store_be16(zeroed + kIpv4CheckOffset, 0);
    EXPECT_EQ(checksum_finish(checksum_add(0, zeroed, sizeof zeroed)), 0xb861);
}

TEST(InternetChecksum, even_pieces_sum_like_the_whole) {
    std::array<uint8_t, 64> bytes{};
    for (size_t i = 0; i < bytes.size(); ++i) {
        bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    }
    const uint16_t whole = checksum_add(0, bytes.data(), 54);
    const uint16_t split =
        checksum_add(checksum_add(checksum_add(0, bytes.data(), 14), bytes.data() + 14, 20),
                     bytes.data() + 34, 20);
    EXPECT_EQ(whole, split);
}

TEST(InternetChecksum, agrees_with_the_naive_sum_for_every_length_and_alignment) {
    std::mt19937 rng(1071);
    std::vector<uint8_t> buffer(200);
    for (int round = 0; round < 50; ++round) {
        for (uint8_t& b : buffer) {
            b = static_cast<uint8_t>(rng());
        }
        if (round == 0) {
            std::fill(buffer.begin(), buffer.end(), 0xff);  // the most carries
        }
        for (size_t offset = 0; offset < 4; ++offset) {
            for (size_t len = 0; len + offset <= buffer.size(); ++len) {
                const uint32_t seed = static_cast<uint32_t>(rng() & 0x1ffff);
                ASSERT_EQ(checksum_add(seed, buffer.data() + offset, len),
                          naive_checksum_fold(buffer.data() + offset, len, seed))
                    << "len " << len << " offset " << offset;
            }
        }
    }
}

TEST(InternetChecksum, zero_stays_zero_and_a_nonzero_sum_never_folds_to_zero) {
    const uint8_t zeros[6]{};
    EXPECT_EQ(checksum_add(0, zeros, sizeof zeros), 0);
    const uint8_t ones[] = {0xff, 0xff, 0xff, 0xff};
    EXPECT_EQ(checksum_add(0, ones, sizeof ones), 0xffff);
    EXPECT_EQ(checksum_fold(0x1fffe), 0xffff);
}

TEST(InternetChecksum, pseudo_header_sums_addresses_protocol_and_length) {
    uint8_t ip4[kIpv4HeaderLen]{};
    store_be32(ip4 + kIpv4SrcOffset, 0xc0a80001);
    store_be32(ip4 + kIpv4SrcOffset + 4, 0xc0a800c7);
    const uint32_t expected4 = 0xc0a8 + 0x0001 + 0xc0a8 + 0x00c7 + kIpProtoUdp + 0x5f;
    EXPECT_EQ(pseudo_header_sum(ip4, true, kIpProtoUdp, 0x5f), checksum_fold(expected4));

    uint8_t ip6[kIpv6HeaderLen]{};
    ip6[kIpv6SrcOffset] = 0xfe;
    ip6[kIpv6SrcOffset + 31] = 0x01;
    // A length above 16 bits (a GSO frame's) adds both halves.
    const uint32_t expected6 = 0xfe00 + 0x0001 + kIpProtoTcp + 0x0001 + 0x0010;
    EXPECT_EQ(pseudo_header_sum(ip6, false, kIpProtoTcp, 0x10010), checksum_fold(expected6));
}

}  // namespace
}  // namespace vnet::packet
