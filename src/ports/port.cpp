#include "ports/port.hpp"

namespace vnet::ports {

const char* to_string(PortKind k) {
    switch (k) {
        case PortKind::vhost_user:
            return "vhost-user";
        case PortKind::tap:
            return "tap";
        case PortKind::null:
            return "null";
    }
    return "unknown";
}

// Defaults: a port that does not play a role offers nothing in it.
uint16_t Port::receive_burst(uint16_t, packet::PacketBurst&, uint16_t) {
    return 0;
}
void Port::complete_burst(uint16_t, const packet::PacketBurst&, uint16_t) {}
bool Port::next_rx_buffer(uint16_t, uint32_t, std::span<const iovec>*) {
    return false;
}
void Port::commit_rx_buffer(uint16_t, uint32_t) {}
void Port::flush_rx_buffers(uint16_t) {}
int32_t Port::receive_one(uint16_t, std::span<const iovec>) {
    return 0;
}

}  // namespace vnet::ports
