// Zero-copy views of a byte range of a packet that is spread over iovecs.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace vnet::gro {

// Writes to `dst` the iovecs that cover bytes [offset, offset + length) of
// the concatenation of `src`, skipping empty pieces. Returns how many were
// written, or -1 (nothing usable in `dst`) when `src` is shorter than
// offset + length or `dst` has too little room.
int slice_iovecs(std::span<const iovec> src, size_t offset, size_t length, std::span<iovec> dst);

// Copies up to `length` leading bytes of the concatenation of `src` into
// `dst`; returns how many were copied (fewer when `src` is shorter). Used to
// take a private copy of headers that may be split across iovecs anywhere.
size_t gather_prefix(std::span<const iovec> src, uint8_t* dst, size_t length);

}  // namespace vnet::gro
