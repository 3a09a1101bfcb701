#include "gro/iovec_slice.hpp"

#include <algorithm>
#include <cstring>

namespace vnet::gro {

int slice_iovecs(std::span<const iovec> src, size_t offset, size_t length, std::span<iovec> dst) {
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

size_t gather_prefix(std::span<const iovec> src, uint8_t* dst, size_t length) {
    size_t copied = 0;
    for (const iovec& piece : src) {
        if (copied == length) {
            break;
        }
        const size_t take = std::min(piece.iov_len, length - copied);
        if (take != 0) {  // an empty piece may have a null base, which memcpy must not see
            std::memcpy(dst + copied, piece.iov_base, take);
            copied += take;
        }
    }
    return copied;
}

}  // namespace vnet::gro
