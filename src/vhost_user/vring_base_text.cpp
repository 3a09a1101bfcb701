#include "vhost_user/vring_base_text.hpp"

#include <spdlog/fmt/fmt.h>

#include "virtio/ring/packed_layout.hpp"

namespace vnet::vhost_user {

std::string describe_vring_base(RingFormat format, uint32_t base) {
    if (format == RingFormat::split) {
        return fmt::format("avail index {}", static_cast<uint16_t>(base));
    }
    const auto avail = virtio::PackedPosition::decode(static_cast<uint16_t>(base));
    // As SET_VRING_BASE reads it: a used half of 0 (DPDK virtio-user sends
    // only the avail half) means used = avail.
    const auto used_bits = static_cast<uint16_t>(base >> 16);
    const auto used = used_bits == 0 ? avail : virtio::PackedPosition::decode(used_bits);
    return fmt::format("avail index {} wrap {}, used index {} wrap {}", avail.index,
                       avail.wrap ? 1 : 0, used.index, used.wrap ? 1 : 0);
}

}  // namespace vnet::vhost_user
