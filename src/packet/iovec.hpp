// Bytes spread over iovecs (a guest's descriptor chain, a merged GRO frame):
// zero-copy slices of a byte range, and copies into or out of them. Every
// function stops at the end of the iovecs it is given: a length taken from
// a packet is never trusted to fit.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace vnet::packet {

// The sum of the iovecs' lengths.
size_t total_length(std::span<const iovec> iovs);
// Whether the iovecs hold `length` bytes or more: total_length(iovs) >=
// length, inline and stopping at the piece that reaches it (a switched
// frame is two pieces, and this is asked once per frame).
inline bool holds_at_least(std::span<const iovec> iovs, size_t length) {
    size_t have = 0;
    for (const iovec& piece : iovs) {
        have += piece.iov_len;
        if (have >= length) {
            return true;
        }
    }
    return length == 0;
}

// The walks over any number of pieces behind the inline functions below.
int slice_iovecs_pieces(std::span<const iovec> src, size_t offset, size_t length,
                        std::span<iovec> dst);
size_t gather_prefix_pieces(std::span<const iovec> src, void* dst, size_t length);
size_t scatter_at_pieces(std::span<const iovec> dst, size_t offset, const void* src, size_t length);
size_t copy_iovecs_pieces(std::span<const iovec> dst, std::span<const iovec> src, size_t length);

// copy_iovecs with streaming stores (packet/streaming_copy.hpp), fenced
// before it returns: for a frame of kStreamingCopyMinFrame or more bound for
// another CPU.
size_t copy_iovecs_streaming(std::span<const iovec> dst, std::span<const iovec> src, size_t length);

// Writes to `dst` the iovecs that cover bytes [offset, offset + length) of
// the concatenation of `src`, skipping empty pieces. Returns how many were
// written, or -1 (nothing usable in `dst`) when `src` is shorter than
// offset + length or `dst` has too little room. The range inside the first
// piece is the common case, inline.
inline int slice_iovecs(std::span<const iovec> src, size_t offset, size_t length,
                        std::span<iovec> dst) {
    if (!src.empty() && !dst.empty() && length != 0 && length <= src[0].iov_len &&
        offset <= src[0].iov_len - length) {
        dst[0] = iovec{static_cast<uint8_t*>(src[0].iov_base) + offset, length};
        return 1;
    }
    return slice_iovecs_pieces(src, offset, length, dst);
}

// Each copy handles the common case inline: all of it in the first piece (a
// guest's buffer is usually one descriptor), so a header-sized copy of a
// constant size is a few moves, not a loop around a memcpy call. Zero
// lengths take the walk, which never hands memcpy the null base an empty
// piece may have.

// Copies up to `length` leading bytes of the concatenation of `src` into
// `dst`; returns how many were copied (fewer when `src` is shorter). Used to
// take a private copy of headers that may be split across iovecs anywhere.
inline size_t gather_prefix(std::span<const iovec> src, void* dst, size_t length) {
    if (!src.empty() && length != 0 && length <= src[0].iov_len) {
        std::memcpy(dst, src[0].iov_base, length);
        return length;
    }
    return gather_prefix_pieces(src, dst, length);
}

// Copies up to `length` bytes from byte `offset` of the concatenation of
// `src` into `dst`; returns how many were copied (fewer when `src` ends
// first). One pass over the pieces, whatever their number: the copy of a
// frame assembled from several pieces (a switched frame's rewritten header
// line, then its payload) into one buffer. That frame's shape (the range
// starts in the first of two pieces and ends in the second) is copied
// inline, once per switched frame.
size_t gather_at_pieces(std::span<const iovec> src, size_t offset, void* dst, size_t length);
inline size_t gather_at(std::span<const iovec> src, size_t offset, void* dst, size_t length) {
    if (src.size() == 2 && offset < src[0].iov_len) {
        const size_t first = src[0].iov_len - offset;
        // Both parts non-empty: neither base is null, as memcpy needs.
        if (first < length && length - first <= src[1].iov_len) {
            auto* out = static_cast<uint8_t*>(dst);
            std::memcpy(out, static_cast<const uint8_t*>(src[0].iov_base) + offset, first);
            std::memcpy(out + first, src[1].iov_base, length - first);
            return length;
        }
    }
    return gather_at_pieces(src, offset, dst, length);
}

// Copies `length` bytes at `src` to byte `offset` of the concatenation of
// `dst` (e.g. a header field in a buffer a guest split over tiny
// descriptors); returns how many were copied (fewer when `dst` ends first).
inline size_t scatter_at(std::span<const iovec> dst, size_t offset, const void* src,
                         size_t length) {
    if (!dst.empty() && length != 0 && length <= dst[0].iov_len &&
        offset <= dst[0].iov_len - length) {
        std::memcpy(static_cast<uint8_t*>(dst[0].iov_base) + offset, src, length);
        return length;
    }
    return scatter_at_pieces(dst, offset, src, length);
}

// Copies the first `length` bytes of the concatenation of `src` into the
// buffer `dst` describes; returns how many were copied (fewer when either
// ends first).
inline size_t copy_iovecs(std::span<const iovec> dst, std::span<const iovec> src, size_t length) {
    if (!dst.empty() && length != 0 && length <= dst[0].iov_len) {
        // One destination piece (a guest's RX buffer): a gather.
        return gather_prefix(src, dst[0].iov_base, length);
    }
    return copy_iovecs_pieces(dst, src, length);
}

}  // namespace vnet::packet
