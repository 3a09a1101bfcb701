#include "control/ports/port_factory.hpp"

#include <array>

#include "ports/null/null_port.hpp"

namespace vnet::control {

namespace {

// The kind names are the [[port]] types (control::to_string(PortType)).
constexpr std::array<PortFactoryEntry, 4> kPortFactories{{
    {"vhost-user", &build_vhost_user_port, &vhost_user_handover_key, &service_handover_fds,
     &vhost_user_list_fields, true},
    {"tap", &build_tap_port, &tap_handover_key, &tap_handover_fds, &tap_list_fields, true},
    {"null", &build_null_port},
    {"vxlan", &build_vxlan_port, &vxlan_handover_key, &vxlan_handover_fds, &vxlan_list_fields,
     false, &vxlan_change_peer},
}};

}  // namespace

std::span<const PortFactoryEntry> port_factories() {
    return kPortFactories;
}

const PortFactoryEntry* find_port_factory(std::string_view kind) {
    for (const PortFactoryEntry& entry : kPortFactories) {
        if (entry.kind == kind) {
            return &entry;
        }
    }
    return nullptr;
}

std::vector<int> service_handover_fds(ports::Port&, PortService* service) {
    return service == nullptr ? std::vector<int>{} : service->handover_fds();
}

BuiltPort build_null_port(const PortConfig& config, const PortContext& context) {
    return {std::make_unique<ports::NullPort>(config.name, context.config.queue_pairs_of(config)),
            nullptr};
}

}  // namespace vnet::control
