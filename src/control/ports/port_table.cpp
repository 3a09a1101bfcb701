#include "control/ports/port_table.hpp"

#include <algorithm>
#include <stdexcept>

#include "dataplane/forward_path.hpp"

namespace vnet::control {

PortTable::PortTable(Wiring wiring) : w_(std::move(wiring)) {}

void PortTable::open_config_ports() {
    const Config& config = w_.config;
    for (const PortConfig& pc : config.ports) {
        ports_.push_back(build_port(pc, config.connection_of(pc.name)));
        if (!pc.switch_name.empty()) {
            ports_.back().switch_id = w_.switches.attach_to_switch(pc, *ports_.back().port);
        }
    }
    next_placement_group_ = std::max<size_t>(1, config.connections.size());
    for (const auto& [a_name, b_name] : config.connections) {
        connect_ports(*entry_named(a_name), *entry_named(b_name));
    }
}

PortEntry PortTable::build_port(const PortConfig& pc, size_t placement_group) {
    const PortFactoryEntry* factory = find_port_factory(to_string(pc.type()));
    if (factory == nullptr) {
        throw std::invalid_argument("port '" + pc.name + "': no factory for type " +
                                    to_string(pc.type()));
    }
    PortContext context{
        .config = w_.config,
        .log = w_.log,
        .reactor = w_.reactor,
        .control_queue = w_.control_queue,
        .run_on_owner =
            [this, name = pc.name](uint16_t queue, const std::function<void()>& work) {
                owner_of(name, queue).run_sync(work);
            },
        .handed_over = w_.handed_over ? w_.handed_over(pc) : nullptr,
    };
    // A guest or tap on a switch with a VXLAN uplink gets the tunnel's MTU
    // unless its port says otherwise: its frames must fit encapsulated (a
    // pod's tap sending 1500-byte frames into a 1450 tunnel would lose
    // every full-sized one). Ports made before the uplink keep theirs.
    PortConfig effective = pc;
    if (factory->takes_uplink_mtu && !pc.mtu && !pc.switch_name.empty()) {
        effective.mtu = w_.config.uplink_mtu_of(pc.switch_name);
    }
    BuiltPort built = factory->build(effective, context);
    auto policer = std::make_unique<dataplane::IngressPolicer>();
    policer->configure(pc.ingress_policing_rate, pc.ingress_policing_burst);
    return PortEntry{factory->kind, std::move(built.port), placement_group,
                     std::nullopt,  std::move(policer),    std::move(built.service)};
}

PortEntry* PortTable::entry_named(const std::string& name) {
    for (PortEntry& p : ports_) {
        if (p.port->name() == name) {
            return &p;
        }
    }
    return nullptr;
}

ports::Port* PortTable::port_named(const std::string& name) {
    PortEntry* entry = entry_named(name);
    return entry == nullptr ? nullptr : entry->port.get();
}

PortEntry* PortTable::entry_of(const ports::Port& port) {
    for (PortEntry& p : ports_) {
        if (p.port.get() == &port) {
            return &p;
        }
    }
    return nullptr;
}

dataplane::Worker& PortTable::owner_of(const std::string& port_name, uint16_t queue) {
    const PortEntry* entry = entry_named(port_name);
    if (entry == nullptr) {  // still being built
        return *w_.workers[w_.placement.worker_for(w_.config.connection_of(port_name), queue)];
    }
    if (entry->switch_id) {
        return w_.switches.worker_of_switch(*entry->switch_id);
    }
    return *w_.workers[w_.placement.worker_for(entry->placement_group, queue)];
}

// A tap whose peer is not a guest (another tap, a discard port) can take
// any GSO frame on the way out, since a tap accepts GSO writes whatever its
// offloads say: let the host stack hand us 64 KB frames with partial
// checksums (TUNSETOFFLOAD as if a guest had negotiated every GUEST_*
// offload), the pass-through that spares segmenting and re-merging.
// Segments that still arrive one by one (a sender with TSO off) come with
// partial checksums too, which is what lets GRO merge them. A guest peer
// tells its own features when it negotiates them (VhostUserService).
void PortTable::offer_gso(ports::Port& port, const ports::Port& peer) {
    if (peer.has_front_end()) {
        return;
    }
    std::string applied = port.follow_peer_features(every_guest_offload());
    if (!applied.empty()) {
        w_.log->info("port {}: {} (peer {} takes GSO frames)", port.name(), applied, peer.name());
    }
}

virtio::FeatureSet every_guest_offload() {
    using virtio::Feature;
    return virtio::FeatureSet{Feature::net_guest_csum, Feature::net_guest_tso4,
                              Feature::net_guest_tso6, Feature::net_guest_ecn,
                              Feature::net_guest_ufo,  Feature::net_guest_uso4,
                              Feature::net_guest_uso6};
}

void PortTable::connect_ports(PortEntry& a_entry, PortEntry& b_entry) {
    ports::Port* a = a_entry.port.get();
    ports::Port* b = b_entry.port.get();
    const ports::QueuePairOptions& po = w_.config.datapath;
    offer_gso(*a, *b);
    offer_gso(*b, *a);
    const size_t group = a_entry.placement_group;
    uint16_t queues = std::min(a->queue_count(), b->queue_count());
    for (uint16_t q = 0; q < queues; ++q) {
        dataplane::Worker& w = *w_.workers[w_.placement.worker_for(group, q)];
        // A direction whose source produces nothing (a discard port)
        // has no path.
        for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            if (dataplane::ForwardPath::style_between(from->capabilities(q), to->capabilities(q))) {
                auto path = std::make_unique<dataplane::ForwardPath>(*from, q, *to, q, po);
                path->set_ingress_policer(entry_of(*from)->policer.get());
                w.run_sync([&w, &path] { w.add_engine(std::move(path)); });
            }
        }
    }
    w_.log->info(
        "cross-connect {} <-> {} ({} queue pair(s) from worker {}, tx_batch {}, "
        "tx_peek {}, gro {})",
        a->name(), b->name(), queues, w_.placement.worker_for(group, 0), po.tx_batch, po.tx_peek,
        po.gro);
}

void PortTable::disconnect_port(const ports::Port& port) {
    for (const auto& worker : w_.workers) {
        dataplane::Worker& w = *worker;
        w.run_sync([&w, &port] {
            // Its cross-connect paths go; a switch it is on lets it go on its own.
            std::vector<const dataplane::ForwardPath*> gone;
            for (const auto& engine : w.engines()) {
                auto* path = dynamic_cast<dataplane::ForwardPath*>(engine.get());
                if (path != nullptr &&
                    (&path->source() == &port || &path->destination() == &port)) {
                    path->abandon_pending();
                    gone.push_back(path);
                }
            }
            for (const dataplane::ForwardPath* path : gone) {
                w.remove_engine(path);
            }
        });
    }
}

void PortTable::start_services() {
    services_started_ = true;
    for (PortEntry& p : ports_) {
        if (p.service) {
            const PortConfig* peer = w_.config.peer_of(p.port->name());
            p.service->start(peer == nullptr ? nullptr : port_named(peer->name));
        }
    }
}

void PortTable::stop_services() {
    for (PortEntry& p : ports_) {
        p.service.reset();
    }
}

std::vector<upgrade::HandoverOffer> PortTable::handover_offers() {
    std::vector<upgrade::HandoverOffer> offers;
    for (PortEntry& p : ports_) {
        const PortFactoryEntry* factory = find_port_factory(p.kind);
        const PortConfig* pc = w_.config.find_port(p.port->name());
        if (factory == nullptr || factory->handover_fds == nullptr || pc == nullptr) {
            continue;
        }
        std::vector<int> fds = factory->handover_fds(*p.port, p.service.get());
        if (!fds.empty()) {
            offers.push_back({upgrade::handover_offer(std::string(p.kind), pc->name,
                                                      factory->handover_key(*pc), fds.size()),
                              std::move(fds)});
        }
    }
    return offers;
}

void PortTable::add_port(PortConfig pc, const std::string& peer) {
    Config& config = w_.config;
    if (config.find_port(pc.name) != nullptr) {
        throw std::invalid_argument("a port named '" + pc.name + "' exists already");
    }
    Config next = config;
    next.ports.push_back(pc);
    if (!peer.empty()) {
        if (next.find_port(peer) == nullptr) {
            throw std::invalid_argument("no port named '" + peer + "' to connect to");
        }
        next.connections.emplace_back(peer, pc.name);
    }
    next.validate();
    PortEntry* peer_entry = peer.empty() ? nullptr : entry_named(peer);
    const size_t group =
        peer_entry != nullptr ? peer_entry->placement_group : next_placement_group_++;
    // The new entry is added last and taken away again if anything below
    // throws (a socket path in a missing directory, a tap the kernel
    // refuses): then nothing has changed.
    try {
        ports_.push_back(build_port(pc, group));
    } catch (const std::exception& e) {
        throw std::runtime_error("port '" + pc.name + "': " + e.what());
    }
    wire_added_port(pc, peer.empty() ? nullptr : entry_named(peer));  // ports_ may have moved
    config = std::move(next);
    w_.log->info("port {}: added ({}{}{}{}{})", pc.name, to_string(pc.type()),
                 peer.empty() ? "" : ", cross-connected to ", peer,
                 pc.switch_name.empty() ? "" : ", on switch ", pc.switch_name);
    w_.changed();
}

void PortTable::wire_added_port(const PortConfig& pc, PortEntry* peer_entry) {
    PortEntry* added = &ports_.back();
    try {
        if (!pc.switch_name.empty()) {
            added->switch_id = w_.switches.attach_to_switch(pc, *added->port);
        }
        if (peer_entry != nullptr) {
            connect_ports(*peer_entry, *added);
        }
        // Before start_services, it starts with the others.
        if (added->service && services_started_) {
            added->service->start(peer_entry == nullptr ? nullptr : peer_entry->port.get());
        }
        if (peer_entry != nullptr && peer_entry->service && services_started_) {
            peer_entry->service->set_peer(added->port.get());
        }
    } catch (const std::exception& e) {
        if (peer_entry != nullptr && peer_entry->service) {
            peer_entry->service->set_peer(nullptr);
        }
        added->service.reset();
        if (added->switch_id) {
            w_.switches.detach_from_switch(*added->port);
        }
        disconnect_port(*added->port);
        ports_.pop_back();
        throw std::runtime_error("port '" + pc.name + "': " + e.what());
    }
}

void PortTable::remove_port(const std::string& name) {
    PortEntry* entry = entry_named(name);
    if (entry == nullptr) {
        throw std::invalid_argument("no port named '" + name + "'");
    }
    Config& config = w_.config;
    const PortConfig* peer_config = config.peer_of(name);
    PortEntry* peer = peer_config == nullptr ? nullptr : entry_named(peer_config->name);
    // Its guest first (the rings go back through the workers, the guest
    // sees the socket close), then its paths, then the port itself.
    entry->service.reset();
    if (entry->switch_id) {
        w_.switches.detach_from_switch(*entry->port);
    }
    disconnect_port(*entry->port);
    if (peer != nullptr && peer->service) {
        peer->service->set_peer(nullptr);
    }
    ports_.erase(ports_.begin() + (entry - ports_.data()));
    std::erase_if(config.connections,
                  [&name](const auto& c) { return c.first == name || c.second == name; });
    std::erase_if(config.ports, [&name](const PortConfig& p) { return p.name == name; });
    w_.log->info("port {}: removed", name);
    w_.changed();
}

}  // namespace vnet::control
