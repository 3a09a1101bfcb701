#include "packet/iovec.hpp"

#include <algorithm>
#include <cstring>

#include "packet/streaming_copy.hpp"

namespace vnet::packet {
namespace {

// The walk behind both iovec-to-iovec copies; `copy` moves one run that
// lies inside one piece on each side.
template <typename Copy>
size_t copy_iovecs_with(std::span<const iovec> dst, std::span<const iovec> src, size_t length,
                        Copy copy) {
    size_t di = 0, doff = 0, si = 0, soff = 0, copied = 0;
    while (copied < length && di < dst.size() && si < src.size()) {
        const size_t n =
            std::min({length - copied, dst[di].iov_len - doff, src[si].iov_len - soff});
        if (n != 0) {
            copy(static_cast<uint8_t*>(dst[di].iov_base) + doff,
                 static_cast<const uint8_t*>(src[si].iov_base) + soff, n);
        }
        copied += n;
        doff += n;
        soff += n;
        if (doff == dst[di].iov_len) {
            ++di;
            doff = 0;
        }
        if (soff == src[si].iov_len) {
            ++si;
            soff = 0;
        }
    }
    return copied;
}

}  // namespace

size_t total_length(std::span<const iovec> iovs) {
    size_t total = 0;
    for (const iovec& piece : iovs) {
        total += piece.iov_len;
    }
    return total;
}

int slice_iovecs_pieces(std::span<const iovec> src, size_t offset, size_t length,
                        std::span<iovec> dst) {
    size_t written = 0;
    for (const iovec& piece : src) {
        if (length == 0) {
            break;
        }
        if (offset >= piece.iov_len) {
            offset -= piece.iov_len;
            continue;
        }
        const size_t take = std::min(piece.iov_len - offset, length);
        if (written == dst.size()) {
            return -1;
        }
        dst[written++] = iovec{static_cast<uint8_t*>(piece.iov_base) + offset, take};
        offset = 0;
        length -= take;
    }
    return length == 0 ? static_cast<int>(written) : -1;
}

size_t gather_prefix_pieces(std::span<const iovec> src, void* dst, size_t length) {
    auto* out = static_cast<uint8_t*>(dst);
    size_t copied = 0;
    for (const iovec& piece : src) {
        if (copied == length) {
            break;
        }
        const size_t take = std::min(piece.iov_len, length - copied);
        if (take != 0) {  // an empty piece may have a null base, which memcpy must not see
            std::memcpy(out + copied, piece.iov_base, take);
            copied += take;
        }
    }
    return copied;
}

size_t gather_at_pieces(std::span<const iovec> src, size_t offset, void* dst, size_t length) {
    auto* out = static_cast<uint8_t*>(dst);
    size_t copied = 0;
    for (const iovec& piece : src) {
        if (copied == length) {
            break;
        }
        if (offset >= piece.iov_len) {
            offset -= piece.iov_len;  // an empty piece too: its base is never read
            continue;
        }
        const size_t take = std::min(piece.iov_len - offset, length - copied);
        std::memcpy(out + copied, static_cast<const uint8_t*>(piece.iov_base) + offset, take);
        copied += take;
        offset = 0;
    }
    return copied;
}

size_t scatter_at_pieces(std::span<const iovec> dst, size_t offset, const void* src,
                         size_t length) {
    const auto* in = static_cast<const uint8_t*>(src);
    size_t copied = 0;
    for (const iovec& piece : dst) {
        if (copied == length) {
            break;
        }
        if (offset >= piece.iov_len) {
            offset -= piece.iov_len;
            continue;
        }
        const size_t take = std::min(piece.iov_len - offset, length - copied);
        std::memcpy(static_cast<uint8_t*>(piece.iov_base) + offset, in + copied, take);
        copied += take;
        offset = 0;
    }
    return copied;
}

size_t copy_iovecs_pieces(std::span<const iovec> dst, std::span<const iovec> src, size_t length) {
    return copy_iovecs_with(dst, src, length,
                            [](void* d, const void* s, size_t n) { std::memcpy(d, s, n); });
}

size_t copy_iovecs_streaming(std::span<const iovec> dst, std::span<const iovec> src,
                             size_t length) {
    const size_t copied = copy_iovecs_with(dst, src, length, streaming_copy);
    streaming_copy_fence();
    return copied;
}

}  // namespace vnet::packet
