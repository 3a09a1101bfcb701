// port.show for a VM port (vnetctl show): the socket and the connection's
// state, then what the front end negotiated and mapped and every ring it
// set up, VPP `show vhost-user` style. The device's part is control-thread
// state, read here; the rings' cursors and the guest's ring fields belong
// to the worker that owns each ring and are read there
// (VhostUserPort::ring_view).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "control/ports/vhost_user/vhost_user_service.hpp"
#include "vhost_user/protocol_feature_names.hpp"
#include "virtio/feature_names.hpp"
#include "virtio/log/dirty_log.hpp"

namespace vnet::control {

namespace {

std::string hex(uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

nlohmann::json bits_json(uint64_t bits, std::string_view (*name_of)(unsigned)) {
    return {{"bits", bits}, {"hex", hex(bits)}, {"names", virtio::bit_names(bits, name_of)}};
}

nlohmann::json memory_json(const virtio::GuestMemoryMap& memory) {
    nlohmann::json regions = nlohmann::json::array();
    for (const virtio::GuestRegion& r : memory.regions()) {
        regions.push_back({{"guest_phys_addr", r.guest_phys_addr},
                           {"size", r.size},
                           {"user_addr", r.user_addr},
                           {"mmap_offset", r.mmap_offset}});
    }
    return regions;
}

// The model names its own fields: nothing here knows a ring format.
void add_ring_state(nlohmann::json& j, const virtio::RingState& s) {
    j["size"] = s.size;
    j["last_avail_idx"] = s.last_avail_idx;
    j["last_used_idx"] = s.last_used_idx;
    if (s.cursor_encoding != nullptr) {
        j["cursor_encoding"] = s.cursor_encoding;
    }
    nlohmann::json guest = nlohmann::json::object();
    for (const virtio::RingField& f : s.guest.view()) {
        if (f.boolean) {
            guest[f.name] = f.value != 0;
        } else {
            guest[f.name] = f.value;
        }
    }
    j["guest"] = std::move(guest);
}

}  // namespace

void VhostUserService::show(nlohmann::json& out) {
    const VhostUserSettings& socket = std::get<VhostUserSettings>(config_.settings);
    out["socket"] = {{"path", socket.socket_path}, {"client", socket.client}};
    std::vector<vhost_user::VhostUserDevice*> devs = devices();
    if (devs.empty()) {
        out["state"] = client_ ? "connecting" : "listening";
        return;
    }
    // One front end per port (the server accepts one connection at a time).
    const vhost_user::VhostUserDevice& dev = *devs.front();
    out["state"] = dev.is_broken() ? "broken" : "connected";
    if (dev.is_broken()) {
        out["broken_reason"] = dev.broken_reason();
    }
    out["device_status"] = dev.status();
    out["features"] = bits_json(dev.negotiated_features().bits(), virtio::feature_name);
    out["features_offered"] = bits_json(dev.offered_features().bits(), virtio::feature_name);
    out["protocol_features"] =
        bits_json(dev.negotiated_protocol_features().bits(), vhost_user::protocol_feature_name);
    const char* format = virtio::format_name(dev.ring_model());
    out["ring_format"] = format;
    out["memory"] = dev.memory() ? memory_json(*dev.memory()) : nlohmann::json::array();
    // Live migration: is the front end logging, and did SEND_RARP announce.
    const virtio::DirtyLog* log = dev.dirty_log();
    out["migration"] = {{"dirty_logging", dev.logging()},
                        {"log_bytes", log != nullptr ? log->size_bytes() : 0},
                        {"pages_beyond_log", log != nullptr ? log->pages_beyond() : 0},
                        {"rarp_announcements", port_.announcements_sent()}};
    nlohmann::json rings = nlohmann::json::array();
    for (uint32_t i = 0; i < dev.queue_count(); ++i) {
        const vhost_user::VhostUserDevice::VringInfo info = dev.vring_info(i);
        if (info.num == 0 && !info.started) {
            continue;  // a ring the front end never set up
        }
        const bool tx = (i % 2) == 1;
        nlohmann::json r{{"index", i},
                         {"queue_pair", i / 2},
                         {"virtqueue", tx ? "tx" : "rx"},
                         {"direction", tx ? "from_guest" : "to_guest"},
                         {"format", format},
                         {"size", info.num},
                         {"started", info.started},
                         {"enabled", info.enabled},
                         {"ready", info.ready},
                         {"desc_user_addr", info.addr.desc_user_addr},
                         {"avail_user_addr", info.addr.avail_user_addr},
                         {"used_user_addr", info.addr.used_user_addr}};
        if (i < 2u * port_.queue_count()) {
            const ports::VhostUserPort::RingView v = port_.ring_view(i);
            r["running"] = v.running;
            r["kick_fd"] = v.kick_fd;
            r["call_fd"] = v.call_fd;
            r["kicks"] = v.kicks;
            r["calls"] = v.calls;
            r["packets"] = v.packets;
            r["drops"] = v.drops;
            r["inflight_resumed"] = v.inflight_resumed;
            if (v.memory_lost) {
                r["memory_lost"] = true;
            }
            if (v.state) {
                add_ring_state(r, *v.state);
            }
        } else {
            r["running"] = false;  // beyond the queue pairs this port serves
        }
        rings.push_back(std::move(r));
    }
    out["rings"] = std::move(rings);
}

}  // namespace vnet::control
