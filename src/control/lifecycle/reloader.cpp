#include "control/lifecycle/reloader.hpp"

#include <algorithm>
#include <stdexcept>

#include "control/config/config_diff.hpp"

namespace vnet::control {

Reloader::Reloader(Logger log, std::function<Config()> reread, Config file, Wiring wiring)
    : log_(std::move(log)),
      reread_(std::move(reread)),
      file_(std::move(file)),
      w_(std::move(wiring)) {}

nlohmann::json Reloader::reload() {
    if (!reread_) {
        throw std::invalid_argument(
            "no config file to re-read (vnetd was started with flags only)");
    }
    Config file = reread_();  // throws naming the file and the key
    ConfigPlan plan = plan_reload(file_, file);
    // What the file cannot know: switches vnetctl added or put ports on.
    for (const std::string& name : plan.remove_switches) {
        if (std::string refusal = w_.switches.removal_refusal(name, plan.remove);
            !refusal.empty()) {
            plan.refusals.push_back(refusal);
        }
    }
    for (const SwitchConfig& sc : plan.add_switches) {
        if (w_.switches.switch_named(sc.name) != nullptr) {
            plan.refusals.push_back("switch '" + sc.name +
                                    "' is new in the file but exists already (vnetctl switch add)");
        }
    }
    if (!plan.refusals.empty()) {
        std::string reasons;
        for (const std::string& r : plan.refusals) {
            reasons += (reasons.empty() ? "" : "; ") + r;
        }
        throw std::invalid_argument("reload refused, nothing changed: " + reasons);
    }
    nlohmann::json done{{"removed", nlohmann::json::array()},
                        {"added", nlohmann::json::array()},
                        {"switches_removed", nlohmann::json::array()},
                        {"switches_added", nlohmann::json::array()},
                        {"options", nlohmann::json::object()}};
    Undo undo;
    try {
        const Config& running = w_.running;
        // Peers first: removing one end of a pair forgets the cross-connect.
        for (const std::string& name : plan.remove) {
            if (const PortConfig* pc = running.find_port(name); pc != nullptr) {
                const PortConfig* peer = running.peer_of(name);
                undo.removed_ports.emplace_back(*pc, peer == nullptr ? "" : peer->name);
            }
        }
        for (const std::string& name : plan.remove) {
            if (w_.ports.entry_named(name) != nullptr) {  // may be gone already (vnetctl port del)
                w_.ports.remove_port(name);
                done["removed"].push_back(name);
            }
        }
        for (const std::string& name : plan.remove_switches) {
            if (w_.switches.switch_named(name) !=
                nullptr) {  // may be gone already (vnetctl switch del)
                auto sc = std::ranges::find(running.switches, name, &SwitchConfig::name);
                if (sc != running.switches.end()) {
                    undo.removed_switches.push_back(*sc);
                }
                w_.switches.remove_switch(name);
                done["switches_removed"].push_back(name);
            }
        }
        for (const SwitchConfig& sc : plan.add_switches) {
            w_.switches.add_switch(sc);
            undo.added_switches.push_back(sc.name);
            done["switches_added"].push_back(sc.name);
        }
        for (auto& [port, peer] : plan.add) {
            const std::string name = port.name;
            w_.ports.add_port(port, peer);  // its errors name the port
            undo.added_ports.push_back(name);
            done["added"].push_back(name);
        }
    } catch (const std::exception& e) {
        throw std::invalid_argument(std::string("reload failed, rolled back: ") + e.what() +
                                    roll_back(undo));
    }
    for (const auto& [key, text] : plan.options) {
        w_.set_option(key, text);
        done["options"][key] = text;
    }
    file_ = std::move(file);
    return done;
}

// Undoes a reload's steps in reverse; "" when all of it came back, else
// "; not restored: ..." naming what did not (the reload's error says so).
std::string Reloader::roll_back(const Undo& undo) const {
    std::string missed;
    auto attempt = [&](const std::string& what, auto&& step) {
        try {
            step();
        } catch (const std::exception& e) {
            missed += (missed.empty() ? "" : ", ") + what + " (" + e.what() + ")";
        }
    };
    for (auto it = undo.added_ports.rbegin(); it != undo.added_ports.rend(); ++it) {
        attempt("removing port '" + *it + "'", [&] { w_.ports.remove_port(*it); });
    }
    for (auto it = undo.added_switches.rbegin(); it != undo.added_switches.rend(); ++it) {
        attempt("removing switch '" + *it + "'", [&] { w_.switches.remove_switch(*it); });
    }
    for (const SwitchConfig& sc : undo.removed_switches) {
        attempt("switch '" + sc.name + "'", [&] { w_.switches.add_switch(sc); });
    }
    // A pair that both went comes back as it was: the first without its
    // peer (not back yet), the second cross-connected to it.
    for (const auto& removed : undo.removed_ports) {
        // Plain references: clang does not capture structured bindings.
        const PortConfig& port = removed.first;
        const std::string& peer = removed.second;
        const bool peer_back = !peer.empty() && w_.ports.entry_named(peer) != nullptr;
        attempt("port '" + port.name + "'",
                [&] { w_.ports.add_port(port, peer_back ? peer : ""); });
    }
    log_->warn("reload rolled back{}", missed.empty() ? "" : ": not restored: " + missed);
    return missed.empty() ? "" : "; not restored: " + missed;
}

}  // namespace vnet::control
