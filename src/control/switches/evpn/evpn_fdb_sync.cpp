#include "control/switches/evpn/evpn_fdb_sync.hpp"

#include <net/if.h>

#include <chrono>
#include <stdexcept>

#include "common/steady_clock.hpp"
#include "dataplane/switch/mac_address.hpp"
#include "ports/setup_error.hpp"

namespace vnet::control::evpn {
namespace {

unsigned ifindex_of(const std::string& uplink, const std::string& device) {
    const unsigned index = ::if_nametoindex(device.c_str());
    if (index == 0) {
        throw ports::PortSetupError("evpn uplink '" + uplink + "': device " + device + " not found",
                                    errno);
    }
    return index;
}

using dataplane::switching::MacTable;
using dataplane::switching::to_string;

}  // namespace

EvpnFdbSync::EvpnFdbSync(io::Reactor& reactor, const Logger& log, dataplane::Worker& worker,
                         dataplane::switching::SwitchDatapath& datapath, EvpnUplink uplink)
    : reactor_(reactor),
      log_(log),
      worker_(worker),
      datapath_(datapath),
      uplink_(std::move(uplink)),
      fdb_("evpn uplink '" + uplink_.port + "'", ifindex_of(uplink_.port, uplink_.bridge),
           ifindex_of(uplink_.port, uplink_.tap), ifindex_of(uplink_.port, uplink_.vxlan)),
      planner_(uplink_.member) {
    macs_.reserve(datapath_.core().options().mac_table_size);
    log_->info(
        "port {}: evpn: the switch's MACs in vlan {} kept in step with bridge {} every {} ms",
        uplink_.port, uplink_.vlan, uplink_.bridge, kEvpnSyncIntervalMs);
    timer_ = reactor_.schedule(std::chrono::milliseconds(0), [this] {
        timer_armed_ = false;
        run_round();
        schedule_next();
    });
    timer_armed_ = true;
}

EvpnFdbSync::~EvpnFdbSync() {
    if (timer_armed_) {
        reactor_.cancel(timer_);
    }
}

void EvpnFdbSync::schedule_next() {
    timer_ = reactor_.schedule(std::chrono::milliseconds(kEvpnSyncIntervalMs), [this] {
        timer_armed_ = false;
        run_round();
        schedule_next();
    });
    timer_armed_ = true;
}

void EvpnFdbSync::read_switch(uint64_t& now) {
    macs_.clear();
    worker_.run_sync([this, &now] {
        now = steady_now_ns();
        const MacTable& table = datapath_.mac_table();
        table.for_each(now, [this, &table](const MacTable::Entry& e) {
            if (e.vlan == uplink_.vlan && e.age_ns < table.aging_ns() &&
                macs_.size() < macs_.capacity()) {
                macs_.push_back({e.mac, e.member, e.age_ns});
            }
        });
    });
}

void EvpnFdbSync::run_round() {
    uint64_t now = 0;
    read_switch(now);
    const uint64_t since_last =
        last_round_ns_ == 0 ? uint64_t{kEvpnSyncIntervalMs} * 1000000 : now - last_round_ns_;
    last_round_ns_ = now;
    ports::EvpnFdbView kernel;
    try {
        kernel = fdb_.read();
    } catch (const ports::PortSetupError& e) {
        failed(e.what());
        return;
    }
    if (uplink_.socket != nullptr) {
        forward_on_socket(kernel);
    }
    const EvpnFdbPlan plan = planner_.plan(macs_, kernel, since_last);
    if (plan.empty()) {
        last_failure_.clear();
        return;
    }
    apply_to_kernel(plan);
    apply_to_switch(plan);
}

void EvpnFdbSync::apply_to_kernel(const EvpnFdbPlan& plan) {
    bool ok = true;
    for (const MacAddress& mac : plan.add_static) {
        try {
            fdb_.add_static(mac);
            log_->debug("port {}: evpn: {} is local: static entry on {}", uplink_.port,
                        to_string(mac), uplink_.tap);
        } catch (const ports::PortSetupError& e) {
            failed(e.what());
            ok = false;
        }
    }
    for (const MacAddress& mac : plan.remove_static) {
        try {
            fdb_.remove_static(mac);
            log_->debug("port {}: evpn: {} is no longer local: static entry removed", uplink_.port,
                        to_string(mac));
        } catch (const ports::PortSetupError& e) {
            failed(e.what());
            ok = false;
        }
    }
    if (ok) {
        last_failure_.clear();
    }
}

void EvpnFdbSync::apply_to_switch(const EvpnFdbPlan& plan) {
    if (plan.pin.empty() && plan.unpin.empty()) {
        return;
    }
    const uint16_t uplink = uplink_.member;
    const uint16_t vlan = uplink_.vlan;
    worker_.run_sync([this, &plan, uplink, vlan] {
        const uint64_t now = steady_now_ns();
        MacTable& table = datapath_.mac_table();
        for (const Pin& p : plan.pin) {
            const MacTable::Key key = MacTable::key_of(p.mac, vlan);
            const uint16_t on = table.lookup(key, now);
            if (on == MacTable::kUnknown || on == uplink || on == p.seen_on) {
                table.learn(key, uplink, now);
            }
        }
        for (const MacAddress& mac : plan.unpin) {
            const MacTable::Key key = MacTable::key_of(mac, vlan);
            if (table.lookup(key, now) == uplink) {
                table.forget(key);
            }
        }
    });
    for (const MacAddress& mac : plan.unpin) {
        log_->debug("port {}: evpn: {} withdrawn by the control plane", uplink_.port,
                    to_string(mac));
    }
}

void EvpnFdbSync::forward_on_socket(const ports::EvpnFdbView& kernel) {
    std::map<MacAddress, std::string> remotes;
    for (const auto& [mac, vtep] : kernel.remotes) {
        if (!vtep.empty()) {  // the bridge's entry alone names no VTEP
            remotes.emplace(mac, vtep);
        }
    }
    if (socket_forwarding_ && socket_forwarding_->first == kernel.flood &&
        socket_forwarding_->second == remotes) {
        return;
    }
    ports::VxlanForwardingEntries entries;
    entries.flood.assign(kernel.flood.begin(), kernel.flood.end());
    entries.remotes.assign(remotes.begin(), remotes.end());
    ports::VxlanForwardingSkipped skipped;
    worker_.run_sync(
        [this, &entries, &skipped] { skipped = uplink_.socket->set_forwarding(entries); });
    // Logged once per table: the next round offers the port a table only
    // when zebra's entries changed.
    const bool flood_changed = !socket_forwarding_ || socket_forwarding_->first != kernel.flood;
    socket_forwarding_.emplace(kernel.flood, std::move(remotes));
    if (!skipped.empty()) {
        std::string why;
        for (const std::string& reason : skipped.reasons) {
            why += (why.empty() ? "" : "; ") + reason;
        }
        if (skipped.reasons_not_kept != 0) {
            why += "; and " + std::to_string(skipped.reasons_not_kept) + " more";
        }
        log_->warn(
            "port {}: evpn: {} flood VTEP(s) and {} remote MAC(s) of zebra's table left out, the "
            "rest taken: {}",
            uplink_.port, skipped.flood, skipped.remotes, why);
    }
    if (flood_changed) {
        log_->info("port {}: evpn: floods to {} VTEP(s), {} remote MAC(s) each at its VTEP",
                   uplink_.port, entries.flood.size() - skipped.flood,
                   entries.remotes.size() - skipped.remotes);
    } else {
        log_->debug("port {}: evpn: {} remote MAC(s) each at its VTEP", uplink_.port,
                    entries.remotes.size() - skipped.remotes);
    }
}

void EvpnFdbSync::failed(const std::string& what) {
    if (what != last_failure_) {
        log_->warn("port {}: evpn sync: {} (tried again every {} ms)", uplink_.port, what,
                   kEvpnSyncIntervalMs);
        last_failure_ = what;
    }
}

}  // namespace vnet::control::evpn
