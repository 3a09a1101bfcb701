// Bytes spread over iovecs (a guest's descriptor chain, a merged GRO frame):
// zero-copy slices of a byte range, and copies into or out of them. Every
// function stops at the end of the iovecs it is given: a length taken from
// a packet is never trusted to fit.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace vnet::packet {

// The sum of the iovecs' lengths.
size_t total_length(std::span<const iovec> iovs);

// Writes to `dst` the iovecs that cover bytes [offset, offset + length) of
// the concatenation of `src`, skipping empty pieces. Returns how many were
// written, or -1 (nothing usable in `dst`) when `src` is shorter than
// offset + length or `dst` has too little room.
int slice_iovecs(std::span<const iovec> src, size_t offset, size_t length, std::span<iovec> dst);

// Copies up to `length` leading bytes of the concatenation of `src` into
// `dst`; returns how many were copied (fewer when `src` is shorter). Used to
// take a private copy of headers that may be split across iovecs anywhere.
size_t gather_prefix(std::span<const iovec> src, void* dst, size_t length);

// Copies `length` bytes at `src` to byte `offset` of the concatenation of
// `dst` (e.g. a header field in a buffer a guest split over tiny
// descriptors); returns how many were copied (fewer when `dst` ends first).
size_t scatter_at(std::span<const iovec> dst, size_t offset, const void* src, size_t length);

// Copies the first `length` bytes of the concatenation of `src` into the
// buffer `dst` describes; returns how many were copied (fewer when either
// ends first).
size_t copy_iovecs(std::span<const iovec> dst, std::span<const iovec> src, size_t length);

}  // namespace vnet::packet
