#include "commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "answer_tables.hpp"
#include "port_keys.hpp"
#include "show_text.hpp"
#include "text_table.hpp"

namespace vnet::vnetctl {
namespace {

using nlohmann::json;

// vnetd takes only absolute paths (its working directory is / under
// systemd): a path given here is the user's, relative to where vnetctl runs.
std::string absolute_path(const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
}

// vnetd's answer with --json, else `text`.
void print_answer(const Session& s, const json& answer, const std::string& text) {
    std::cout << (s.as_json ? answer.dump(2) : text) << "\n";
}

// vnetctl's --socket (its default when not given), for a subcommand's help.
std::string socket_option(const CLI::App& app) {
    const CLI::App* root = &app;
    while (root->get_parent() != nullptr) {
        root = root->get_parent();
    }
    const CLI::Option* socket = root->get_option("--socket");
    return socket->count() > 0 ? socket->results().front() : socket->get_default_str();
}

// Flags are config keys with dashes: the key for the params.
std::string key_of_flag(std::string flag) {
    std::replace(flag.begin(), flag.end(), '-', '_');
    return flag;
}

class Version final : public Command {
    void declare(CLI::App&) override {}
    int run(Session& s) override {
        const json r = s.client.call("version");
        print_answer(s, r,
                     "vnetd " + text_of(r.value("version", json())) + " (commit " +
                         text_of(r.value("commit", json())) + ")");
        return 0;
    }
};

class Methods final : public Command {
    void declare(CLI::App&) override {}
    int run(Session& s) override {
        const json r = s.client.call("help");
        if (s.as_json) {
            std::cout << r.dump(2) << "\n";
            return 0;
        }
        TextTable t({"method", "what it does"});
        for (const auto& [name, help] : r.items()) {
            t.add_row({name, text_of(help)});
        }
        t.print(std::cout);
        return 0;
    }
};

class Stats final : public Command {
    CLI::App* app_ = nullptr;
    double watch_s_ = 0;
    std::string port_;
    void declare(CLI::App& app) override {
        app_ = &app;
        app.add_option("port", port_, "only this port's counters");
        app.add_option("--watch", watch_s_, "print again every SECONDS, with packet rates")
            ->expected(0, 1)
            ->default_str("1");
    }
    int run(Session& s) override {
        const bool watch = app_->count("--watch") > 0;
        if (watch && watch_s_ <= 0) {
            watch_s_ = 1;
        }
        const json params = port_.empty() ? json::object() : json{{"port", port_}};
        json before = s.client.call("stats", params);
        if (!watch || s.as_json) {
            s.as_json ? void(std::cout << before.dump(2) << "\n") : print_stats(before, nullptr, 0);
        }
        while (watch) {
            std::this_thread::sleep_for(std::chrono::duration<double>(watch_s_));
            json now = s.client.call("stats", params);
            if (s.as_json) {
                std::cout << now.dump() << "\n";
            } else {
                std::cout << "\n";
                print_stats(now, &before, watch_s_);
            }
            std::cout.flush();
            before = std::move(now);
        }
        return 0;
    }
};

class PortList final : public Command {
    void declare(CLI::App&) override {}
    int run(Session& s) override {
        const json r = s.client.call("port.list");
        s.as_json ? void(std::cout << r.dump(2) << "\n") : print_ports(r);
        return 0;
    }
};

// port add KIND NAME [--KEY VALUE...]: the keys are vnetd's [[port]] keys,
// read from it (port_keys.hpp); --set KEY=VALUE reaches any key too.
class PortAdd final : public Command {
    std::string kind_;
    std::string name_;
    std::vector<std::string> key_words_;
    std::vector<std::string> set_;
    std::string peer_;
    void declare(CLI::App& app) override {
        app.add_option("kind", kind_, "the port's kind: vhost-user, tap, null, vxlan")->required();
        app.add_option("name", name_, "the port's name")->required();
        app.add_option("--peer", peer_, "cross-connect it to this port (in none yet)");
        app.add_option("--set", set_, "KEY=VALUE: a [[port]] key");
        app.footer([&app] { return port_keys_help(socket_option(app)); });
    }
    bool take_extra_words(std::vector<std::string> words) override {
        key_words_ = std::move(words);
        return true;
    }
    int run(Session& s) override {
        json params{{"name", name_}, {"type", kind_}};
        if (!key_words_.empty()) {
            try {
                add_key_words(s.client.call("options.list", {{"scope", "port"}}), key_words_,
                              params);
            } catch (const std::invalid_argument& e) {
                std::cerr << "vnetctl: port add: " << e.what() << "\n";
                return 2;
            }
        }
        for (const std::string& kv : set_) {
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                std::cerr << "vnetctl: --set wants KEY=VALUE, not '" << kv << "'\n";
                return 2;
            }
            params[kv.substr(0, eq)] = kv.substr(eq + 1);
        }
        if (!peer_.empty()) {
            params["peer"] = peer_;
        }
        if (params.contains("socket_path")) {
            params["socket_path"] = absolute_path(params["socket_path"].get<std::string>());
        }
        const json r = s.client.call("port.add", params);
        print_answer(s, r, "port " + name_ + " added");
        return 0;
    }
};

class PortDel final : public Command {
    std::string name_;
    void declare(CLI::App& app) override {
        app.add_option("name", name_, "the port's name")->required();
    }
    int run(Session& s) override {
        const json r = s.client.call("port.del", json{{"name", name_}});
        print_answer(s, r, "port " + name_ + " removed");
        return 0;
    }
};

class PortSet final : public Command {
    std::string name_;
    std::optional<uint32_t> rate_;
    std::optional<uint32_t> burst_;
    void declare(CLI::App& app) override {
        app.add_option("name", name_, "the port")->required();
        app.add_option("--ingress-policing-rate", rate_,
                       "police what the port sends to this rate, kbit/s (0 = off)");
        app.add_option("--ingress-policing-burst", burst_,
                       "the policing bucket, kbit (0 = the default, 8000)");
    }
    int run(Session& s) override {
        json params{{"name", name_}};
        if (rate_) {
            params["ingress_policing_rate"] = *rate_;
        }
        if (burst_) {
            params["ingress_policing_burst"] = *burst_;
        }
        const json r = s.client.call("port.set", params);
        if (s.as_json) {
            std::cout << r.dump(2) << "\n";
            return 0;
        }
        TextTable t({"port", "ingress_policing_rate", "ingress_policing_burst"});
        t.add_row({text_of(r.value("name", json())),
                   text_of(r.value("ingress_policing_rate", json())),
                   text_of(r.value("ingress_policing_burst", json()))});
        t.print(std::cout);
        return 0;
    }
};

class Reload final : public Command {
    void declare(CLI::App&) override {}
    static std::string list_or_dash(const json& r, const char* key) {
        return r.value(key, json::array()).empty() ? "-" : r[key].dump();
    }
    int run(Session& s) override {
        const json r = s.client.call("reload");
        if (s.as_json) {
            std::cout << r.dump(2) << "\n";
            return 0;
        }
        std::cout << "removed: " << (r["removed"].empty() ? "-" : r["removed"].dump())
                  << "\nadded: " << (r["added"].empty() ? "-" : r["added"].dump())
                  << "\nswitches removed: " << list_or_dash(r, "switches_removed")
                  << "\nswitches added: " << list_or_dash(r, "switches_added")
                  << "\noptions: " << (r["options"].empty() ? "-" : r["options"].dump()) << "\n";
        return 0;
    }
};

class Upgrade final : public Command {
    std::string binary_;
    void declare(CLI::App& app) override {
        app.add_option("--binary", binary_,
                       "the new vnetd (default: the running one's path, as it is on disk now)");
    }
    int run(Session& s) override {
        const json r = s.client.call(
            "upgrade", binary_.empty() ? json::object() : json{{"binary", absolute_path(binary_)}});
        if (s.as_json) {
            std::cout << r.dump(2) << "\n";
        } else {
            std::cout << "upgraded: pid " << r["pid"] << " (" << r["binary"].get<std::string>()
                      << ") took over in " << r["handover_ms"] << " ms\n";
        }
        return 0;
    }
};

class SwitchList final : public Command {
    void declare(CLI::App&) override {}
    int run(Session& s) override {
        const json r = s.client.call("switch.list");
        s.as_json ? void(std::cout << r.dump(2) << "\n") : print_switches(r);
        return 0;
    }
};

// switch add NAME [options]: the flags are the [[switch]] keys with dashes.
class SwitchAdd final : public Command {
    std::string name_;
    std::map<std::string, std::string> settings_;
    void declare(CLI::App& app) override {
        app.add_option("name", name_, "the switch's name")->required();
        for (const char* key : {"mac-aging-s", "mac-table-size", "destination-hold-us"}) {
            app.add_option_function<std::string>(
                std::string("--") + key, [this, key](const std::string& v) { settings_[key] = v; },
                std::string("the [[switch]] key ") + key);
        }
    }
    int run(Session& s) override {
        json params{{"name", name_}};
        for (const auto& [key, value] : settings_) {
            params[key_of_flag(key)] = value;
        }
        const json r = s.client.call("switch.add", params);
        print_answer(s, r, "switch " + name_ + " added");
        return 0;
    }
};

class SwitchDel final : public Command {
    std::string name_;
    void declare(CLI::App& app) override {
        app.add_option("name", name_, "the switch's name")->required();
    }
    int run(Session& s) override {
        const json r = s.client.call("switch.del", json{{"name", name_}});
        print_answer(s, r, "switch " + name_ + " removed");
        return 0;
    }
};

// switch uplink ...: a switch's VXLAN uplink is a port of type vxlan
// (named uplink-S unless --name says otherwise); its peers change in place.
class UplinkAdd final : public Command {
    std::string switch_;
    std::string kind_;
    std::string name_;
    std::map<std::string, std::string> settings_;
    std::vector<std::string> remotes_;
    bool evpn_ = false;
    void declare(CLI::App& app) override {
        app.add_option("switch", switch_, "the switch")->required();
        app.add_option("kind", kind_, "vxlan")->required()->check(CLI::IsMember({"vxlan"}));
        app.add_option("--name", name_, "the port's name (default: uplink-SWITCH)");
        for (const auto& [flag, key] : std::initializer_list<std::pair<const char*, const char*>>{
                 {"--vni", "vni"},
                 {"--local", "vxlan_local"},
                 {"--dstport", "vxlan_port"},
                 {"--dev", "vxlan_dev"},
                 {"--datapath", "vxlan_datapath"},
                 {"--source-ports", "vxlan_source_ports"},
                 {"--mtu", "mtu"}}) {
            // Copied: clang does not capture structured bindings.
            const char* const setting = key;
            auto* o = app.add_option_function<std::string>(
                flag, [this, setting](const std::string& v) { settings_[setting] = v; },
                std::string("the [[port]] key ") + key);
            if (std::string_view(flag) == "--vni") {
                o->required();
            }
        }
        app.add_option("--remote", remotes_, "a remote host's tunnel address (repeat)");
        app.add_flag("--evpn", evpn_,
                     "BGP EVPN through FRR: remotes from the control plane, the switch's MACs in "
                     "bridge vxbr<VNI>'s FDB (the [[port]] key evpn)");
    }
    int run(Session& s) override {
        const std::string name = name_.empty() ? "uplink-" + switch_ : name_;
        json params{{"name", name}, {"type", kind_}, {"switch", switch_}};
        for (const auto& [key, value] : settings_) {
            params[key] = value;
        }
        if (!remotes_.empty()) {
            params["vxlan_remote"] = remotes_;
        }
        if (evpn_) {
            params["evpn"] = true;
        }
        const json r = s.client.call("port.add", params);
        print_answer(s, r, "switch " + switch_ + ": vxlan uplink " + name + " added");
        return 0;
    }
};

class UplinkDel final : public Command {
    std::string switch_;
    void declare(CLI::App& app) override {
        app.add_option("switch", switch_, "the switch")->required();
    }
    int run(Session& s) override {
        std::string name;
        for (const json& p : s.client.call("port.list")) {
            if (p.value("type", "") == "vxlan" && p.value("switch", "") == switch_) {
                name = p["name"].get<std::string>();
            }
        }
        if (name.empty()) {
            std::cerr << "vnetctl: switch '" << switch_ << "' has no uplink\n";
            return 1;
        }
        const json r = s.client.call("port.del", json{{"name", name}});
        print_answer(s, r, "switch " + switch_ + ": uplink " + name + " removed");
        return 0;
    }
};

// uplink.peer.add / uplink.peer.del.
template <bool kAdd>
class UplinkPeer final : public Command {
    std::string switch_;
    std::string address_;
    void declare(CLI::App& app) override {
        app.add_option("switch", switch_, "the switch")->required();
        app.add_option("address", address_, "the remote host's tunnel address")->required();
    }
    int run(Session& s) override {
        const json r = s.client.call(kAdd ? "uplink.peer.add" : "uplink.peer.del",
                                     json{{"switch", switch_}, {"address", address_}});
        print_answer(s, r,
                     "switch " + switch_ + ": peer " + address_ + (kAdd ? " added" : " removed"));
        return 0;
    }
};

class MacList final : public Command {
    std::string switch_;
    void declare(CLI::App& app) override {
        app.add_option("--switch", switch_, "only this switch's MACs");
    }
    int run(Session& s) override {
        const json r =
            s.client.call("mac.list", switch_.empty() ? json::object() : json{{"switch", switch_}});
        s.as_json ? void(std::cout << r.dump(2) << "\n") : print_macs(r);
        return 0;
    }
};

// mac flush [--switch S] [--port P] (ovs-appctl fdb/flush).
class MacFlush final : public Command {
    std::string switch_;
    std::string port_;
    void declare(CLI::App& app) override {
        app.add_option("--switch", switch_, "only this switch's MACs");
        app.add_option("--port", port_, "only the MACs learned on this port");
    }
    int run(Session& s) override {
        json params = json::object();
        if (!switch_.empty()) {
            params["switch"] = switch_;
        }
        if (!port_.empty()) {
            params["port"] = port_;
        }
        const json r = s.client.call("mac.flush", params);
        print_answer(s, r, text_of(r.value("flushed", json())) + " MAC(s) flushed");
        return 0;
    }
};

// log level [LEVEL] (ovs-appctl vlog/set): prints the level, or sets it.
class LogLevel final : public Command {
    std::string level_;
    void declare(CLI::App& app) override {
        app.add_option("level", level_, "trace, debug, info, warn, error, critical or off");
    }
    int run(Session& s) override {
        const json r =
            s.client.call("log.level", level_.empty() ? json::object() : json{{"level", level_}});
        print_answer(s, r, text_of(r.value("level", json())));
        return 0;
    }
};

class WorkerList final : public Command {
    void declare(CLI::App&) override {}
    int run(Session& s) override {
        const json r = s.client.call("worker.list");
        s.as_json ? void(std::cout << r.dump(2) << "\n") : print_workers(r);
        return 0;
    }
};

class Show final : public Command {
    std::string name_;
    void declare(CLI::App& app) override { app.add_option("name", name_, "only this port"); }
    int run(Session& s) override {
        const json r =
            s.client.call("port.show", name_.empty() ? json::object() : json{{"name", name_}});
        s.as_json ? void(std::cout << r.dump(2) << "\n") : print_show(r, std::cout);
        return 0;
    }
};

class Call final : public Command {
    std::string method_;
    std::string params_ = "{}";
    void declare(CLI::App& app) override {
        app.add_option("method", method_, "method name")->required();
        app.add_option("params", params_, "params as a JSON object or array");
    }
    int run(Session& s) override {
        const json params = json::parse(params_, nullptr, false);
        if (params.is_discarded() || !(params.is_object() || params.is_array())) {
            std::cerr << "vnetctl: params must be a JSON object or array, not '" << params_
                      << "'\n";
            return 2;
        }
        std::cout << s.client.call(method_, params).dump(2) << "\n";
        return 0;
    }
};

template <class C>
std::unique_ptr<Command> make() {
    return std::make_unique<C>();
}

constexpr std::array kCommands{
    CommandRow{"version", "the running vnetd's version and commit (--version: vnetctl's)",
               &make<Version>},
    CommandRow{"methods", "every method the control socket has", &make<Methods>},
    CommandRow{"stats", "counters per port, queue and direction (PORT: that port's)", &make<Stats>},
    CommandRow{"port list", "the ports and where they are", &make<PortList>},
    CommandRow{"port add",
               "add a port to the running vnetd: KIND NAME, then --KEY VALUE for its [[port]] "
               "keys (vnetd.toml(5); --help lists the running vnetd's)",
               &make<PortAdd>},
    CommandRow{"port del", "remove a port (its guest is disconnected)", &make<PortDel>},
    CommandRow{"reload", "re-read vnetd's config file and apply what changed (as SIGHUP does)",
               &make<Reload>},
    CommandRow{"upgrade",
               "upgrade in place: a new vnetd takes over every port, the old one exits 0",
               &make<Upgrade>},
    CommandRow{"port set", "change a port's settings at run time", &make<PortSet>},
    CommandRow{"switch list", "the switches, their ports and counters", &make<SwitchList>},
    CommandRow{"switch add", "add a switch to the running vnetd", &make<SwitchAdd>},
    CommandRow{"switch del", "remove a switch (it must have no ports)", &make<SwitchDel>},
    CommandRow{"switch uplink add", "give a switch a VXLAN uplink", &make<UplinkAdd>},
    CommandRow{"switch uplink del", "remove a switch's VXLAN uplink", &make<UplinkDel>},
    CommandRow{"switch uplink peer add", "send floods to one more host", &make<UplinkPeer<true>>},
    CommandRow{"switch uplink peer del", "stop sending to a host", &make<UplinkPeer<false>>},
    CommandRow{"mac list", "the learned MACs", &make<MacList>},
    CommandRow{"mac flush", "forget learned MACs (every switch's, --switch S's, --port P's)",
               &make<MacFlush>},
    CommandRow{"log level", "print vnetd's log level, or set it (until a restart)",
               &make<LogLevel>},
    CommandRow{"worker list", "each worker: CPU, mode, queue pairs, switches, busy share",
               &make<WorkerList>},
    CommandRow{"show", "a port's socket, features, memory, rings, counters (VPP show vhost-user)",
               &make<Show>},
    CommandRow{"call", "call any method with JSON params (for scripts)", &make<Call>},
};

constexpr std::array kGroups{
    GroupRow{"port", "ports"},
    GroupRow{"switch", "L2 switches"},
    GroupRow{"switch uplink", "a switch's VXLAN uplink to other hosts"},
    GroupRow{"switch uplink peer", "the uplink's remote hosts"},
    GroupRow{"mac", "MAC tables"},
    GroupRow{"log", "vnetd's logging"},
    GroupRow{"worker", "the worker threads"},
};

}  // namespace

std::span<const CommandRow> command_rows() {
    return kCommands;
}

std::span<const GroupRow> group_rows() {
    return kGroups;
}

}  // namespace vnet::vnetctl
