// The daemon's switches: one SwitchDatapath per [[switch]], owned by the
// worker the placement rule gives it, and the one way ports join and leave
// one (at start-up here, at run time from the control methods).
#include <stdexcept>

#include "control/daemon.hpp"

namespace vnet::control {

namespace {

dataplane::switching::MemberConfig member_config_of(const PortConfig& pc) {
    dataplane::switching::MemberConfig m;
    if (pc.trunk.empty()) {
        m.vlans.untagged = pc.vlan.value_or(dataplane::switching::kDefaultVlan);
    } else {
        m.vlans.untagged = pc.vlan;  // the native VLAN, if any
        for (uint16_t v : pc.trunk) {
            m.vlans.tagged.set(v);
        }
    }
    m.allowed_macs = pc.allowed_macs;
    return m;
}

}  // namespace

void Daemon::create_switches() {
    for (size_t i = 0; i < config_.switches.size(); ++i) {
        const SwitchConfig& sc = config_.switches[i];
        dataplane::switching::SwitchDatapathOptions o;
        o.core.mac_aging_s = sc.mac_aging_s;
        o.core.mac_table_size = sc.mac_table_size;
        o.burst = config_.datapath.tx_batch;
        o.weight_packets = config_.datapath.weight_packets;
        o.hold_ns = uint64_t{sc.destination_hold_us} * 1000;
        const size_t w = placement_.worker_for_switch(config_.connections.size(), i);
        dataplane::Worker& worker = *workers_[w];
        dataplane::switching::SwitchDatapath* datapath = nullptr;
        worker.run_sync([&] {
            datapath = &worker.add_switch(
                std::make_unique<dataplane::switching::SwitchDatapath>(sc.name, o));
        });
        switches_.push_back(SwitchEntry{sc.name, &worker, datapath});
        log_->info("switch {}: on worker {}, mac_table_size {}, mac_aging_s {}", sc.name, w,
                   sc.mac_table_size, sc.mac_aging_s);
    }
}

dataplane::Worker& Daemon::owner_of(const std::string& port_name, uint16_t queue) {
    const PortEntry* entry = entry_named(port_name);
    if (entry == nullptr) {  // still being built
        return *workers_[placement_.worker_for(config_.connection_of(port_name), queue)];
    }
    if (entry->switch_index) {
        return *switches_[*entry->switch_index].worker;
    }
    return *workers_[placement_.worker_for(entry->placement_group, queue)];
}

size_t Daemon::attach_to_switch(const PortConfig& config, ports::Port& port) {
    for (size_t index = 0; index < switches_.size(); ++index) {
        SwitchEntry& s = switches_[index];
        if (s.name != config.switch_name) {
            continue;
        }
        uint16_t member = 0;
        std::exception_ptr error;
        s.worker->run_sync([&] {
            try {
                member = s.datapath->attach(port, member_config_of(config));
            } catch (...) {
                error = std::current_exception();
            }
        });
        if (error) {
            std::rethrow_exception(error);
        }
        log_->info("switch {}: port {} is member {} ({})", s.name, port.name(), member,
                   config.trunk.empty() ? "access vlan " + std::to_string(config.vlan.value_or(
                                                               dataplane::switching::kDefaultVlan))
                                        : "trunk");
        return index;
    }
    throw std::invalid_argument("port '" + config.name + "': no switch named '" +
                                config.switch_name + "'");
}

bool Daemon::detach_from_switch(const ports::Port& port) {
    for (SwitchEntry& s : switches_) {
        bool detached = false;
        s.worker->run_sync([&] { detached = s.datapath->detach(port); });
        if (detached) {
            log_->info("switch {}: port {} left", s.name, port.name());
            return true;
        }
    }
    return false;
}

}  // namespace vnet::control
