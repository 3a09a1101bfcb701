#include "packet/streaming_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace vnet::packet {
namespace {

// Below this a piece is not worth the aligned head and tail.
constexpr size_t kStreamingMinPiece = 256;
constexpr size_t kStoreAlign = 16;  // _mm_stream_si128 writes aligned 16 bytes

}  // namespace

#if defined(__SSE2__)

void streaming_copy(void* dst, const void* src, size_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    const auto* in = static_cast<const uint8_t*>(src);
    if (n < kStreamingMinPiece) {
        std::memcpy(out, in, n);
        return;
    }
    const size_t head = -reinterpret_cast<uintptr_t>(out) & (kStoreAlign - 1);
    std::memcpy(out, in, head);
    out += head;
    in += head;
    n -= head;
    // One 64-byte line per round: four unaligned loads, four aligned
    // streaming stores that fill the line in the write-combining buffer.
    for (; n >= 64; n -= 64, in += 64, out += 64) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16));
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32));
        const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 48));
        _mm_stream_si128(reinterpret_cast<__m128i*>(out), a);
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + 16), b);
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + 32), c);
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + 48), d);
    }
    std::memcpy(out, in, n);
}

void streaming_copy_fence() {
    _mm_sfence();
}

#else  // no streaming stores: a plain copy, already ordered

void streaming_copy(void* dst, const void* src, size_t n) {
    std::memcpy(dst, src, n);
}

void streaming_copy_fence() {}

#endif

}  // namespace vnet::packet
