#include "io/batch_reader.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

namespace vnet::io {

ReadBurst read_burst(int fd, std::span<const PacketIov> buffers, std::span<int> lengths) {
    const size_t n = std::min(buffers.size(), lengths.size());
    ReadBurst burst;
    while (burst.packets < n) {
        const PacketIov& buffer = buffers[burst.packets];
        const ssize_t got = ::readv(fd, buffer.iov, static_cast<int>(buffer.count));
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
