#include "io/batch_reader.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace vnet::io {

ReadBurst read_burst(int fd, const packet::PacketBurst& buffers, std::span<int> lengths) {
    const size_t n = std::min<size_t>(buffers.count, lengths.size());
    ReadBurst burst;
    while (burst.packets < n) {
        const packet::BurstPacket& buffer = buffers.packets[burst.packets];
        const ssize_t got = ::readv(fd, buffers.iovecs.data() + buffer.first_iov, buffer.iov_count);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            burst.stop = -errno;
            return burst;
        }
        lengths[burst.packets++] = static_cast<int>(got);
    }
    return burst;
}

}  // namespace vnet::io
