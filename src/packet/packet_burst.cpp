#include "packet/packet_burst.hpp"

#include <algorithm>

namespace vnet::packet {

void PacketBurst::pop_front(uint16_t n) {
    if (n >= count) {
        clear();
        return;
    }
    // Compact both arrays so the kept packets start at index 0: retries are
    // rare (tap full), so the copy is off the common path.
    uint16_t first_kept_iov = packets[n].first_iov;
    std::copy(iovecs.begin() + first_kept_iov, iovecs.begin() + iovecs_used, iovecs.begin());
    for (uint16_t i = n; i < count; ++i) {
        BurstPacket p = packets[i];
        p.first_iov = static_cast<uint16_t>(p.first_iov - first_kept_iov);
        packets[i - n] = p;
    }
    count = static_cast<uint16_t>(count - n);
    iovecs_used = static_cast<uint16_t>(iovecs_used - first_kept_iov);
}

}  // namespace vnet::packet
