// vnetctl: drives a running vnetd through its control socket. Every command
// is one JSON-RPC call (docs/USAGE.md "The control socket"); output is a
// table, or vnetd's JSON as it came with --json.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "rpc_client/control_client.hpp"
#include "show_text.hpp"
#include "text_table.hpp"

namespace {

using nlohmann::json;
using vnet::rpc_client::ControlClient;
using vnet::vnetctl::TextTable;

constexpr const char* kDefaultSocket = "/run/vnetd/vnetd.ctl";

// vnetd takes only absolute paths (its working directory is / under
// systemd): a path given here is the user's, relative to where vnetctl runs.
std::string absolute_path(const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
}

std::string text_of(const json& v) {
    if (v.is_null()) {
        return "-";
    }
    return v.is_string() ? v.get<std::string>() : v.dump();
}

void print_ports(const json& ports) {
    TextTable t({"port", "type", "where", "queue pairs", "peer", "connections"});
    for (const json& p : ports) {
        std::string where =
            text_of(p.contains("socket_path") ? p["socket_path"] : p.value("ifname", json()));
        if (p.value("type", "") == "vxlan") {
            where = text_of(p["device"]) + " vni " + text_of(p["vni"]) + " to ";
            const json& remotes = p["remotes"];
            for (size_t i = 0; i < remotes.size(); ++i) {
                where += (i == 0 ? "" : ",") + text_of(remotes[i]);
            }
            where += remotes.empty() ? "no peer" : "";
        }
        t.add_row({text_of(p.value("name", json())), text_of(p.value("type", json())), where,
                   text_of(p.value("queue_pairs", json())), text_of(p.value("peer", json())),
                   text_of(p.value("connections", json()))});
    }
    t.print(std::cout);
}

void print_switches(const json& switches) {
    TextTable t({"switch", "ports", "macs", "table size", "aging s", "learned", "moved", "aged",
                 "table full", "flooded", "drops"});
    for (const json& s : switches) {
        const json& c = s["counters"];
        uint64_t drops = 0;
        for (auto it = c["drops"].begin(); it != c["drops"].end(); ++it) {
            drops += it->get<uint64_t>();
        }
        std::string ports;
        for (const json& p : s["ports"]) {
            ports += (ports.empty() ? "" : ",") + p.get<std::string>();
        }
        t.add_row({text_of(s["name"]), ports.empty() ? "-" : ports, text_of(s["mac_entries"]),
                   text_of(s["mac_table_size"]), text_of(s["mac_aging_s"]), text_of(c["learned"]),
                   text_of(c["moved"]), text_of(c["aged"]), text_of(c["table_full"]),
                   text_of(c["flooded"]), std::to_string(drops)});
    }
    t.print(std::cout);
}

void print_macs(const json& macs) {
    TextTable t({"switch", "vlan", "mac", "port", "age s"});
    for (const json& m : macs) {
        t.add_row({text_of(m["switch"]), text_of(m["vlan"]), text_of(m["mac"]), text_of(m["port"]),
                   text_of(m["age_s"])});
    }
    t.print(std::cout);
}

uint64_t drops_of(const json& direction) {
    uint64_t sum = 0;
    if (auto drops = direction.find("drops"); drops != direction.end() && drops->is_object()) {
        for (auto it = drops->begin(); it != drops->end(); ++it) {
            sum += it->get<uint64_t>();
        }
    }
    return sum;
}

// One line per port, queue and direction that moved anything; with a
// previous sample, the rates over `seconds` too.
void print_stats(const json& now, const json* before, double seconds) {
    std::map<std::string, uint64_t> previous;
    if (before != nullptr) {
        for (const json& p : (*before)["ports"]) {
            for (const json& q : p["queues"]) {
                for (const char* dir : {"rx", "tx"}) {
                    previous[p["name"].get<std::string>() + "/" + q["queue"].dump() + "/" + dir] =
                        q[dir]["packets"].get<uint64_t>();
                }
            }
        }
    }
    std::vector<std::string> header = {"port", "q", "dir", "packets", "bytes", "bursts", "drops"};
    if (before != nullptr) {
        header.push_back("pps");
    }
    TextTable t(header);
    for (const json& p : now["ports"]) {
        for (const json& q : p["queues"]) {
            for (const char* dir : {"rx", "tx"}) {
                const json& c = q[dir];
                const uint64_t packets = c["packets"].get<uint64_t>();
                const uint64_t drops = drops_of(c);
                if (packets == 0 && drops == 0 && q["queue"].get<int>() != 0) {
                    continue;  // a queue pair nobody uses
                }
                std::vector<std::string> row = {
                    p["name"].get<std::string>(), q["queue"].dump(), dir,
                    std::to_string(packets),      c["bytes"].dump(), c["bursts"].dump(),
                    std::to_string(drops)};
                if (before != nullptr) {
                    const std::string key =
                        p["name"].get<std::string>() + "/" + q["queue"].dump() + "/" + dir;
                    const uint64_t was = previous.count(key) ? previous[key] : 0;
                    row.push_back(std::to_string(
                        static_cast<uint64_t>(static_cast<double>(packets - was) / seconds)));
                }
                t.add_row(row);
            }
        }
    }
    t.print(std::cout);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"vnetctl: drives a running vnetd through its control socket"};
    app.require_subcommand(1);
    std::string socket = kDefaultSocket;
    bool as_json = false;
    app.add_option("--socket", socket, "vnetd's control socket")->capture_default_str();
    unsigned timeout_s = vnet::rpc_client::kDefaultAnswerTimeout.count();
    app.add_option("--timeout", timeout_s,
                   "give up when vnetd does not answer for SECONDS (0: wait)")
        ->capture_default_str();
    app.add_flag("--json", as_json, "print vnetd's JSON answer instead of a table");

    auto* version = app.add_subcommand("version", "vnetd's version");
    auto* methods = app.add_subcommand("methods", "every method the control socket has");
    auto* stats = app.add_subcommand("stats", "counters per port, queue and direction");
    double watch_s = 0;
    stats->add_option("--watch", watch_s, "print again every SECONDS, with packet rates")
        ->expected(0, 1)
        ->default_str("1");
    auto* port = app.add_subcommand("port", "ports")->require_subcommand(1);
    auto* port_list = port->add_subcommand("list", "the ports and where they are");
    // port add KIND NAME [options]: the flags are [[port]] keys with dashes;
    // --set KEY=VALUE reaches any other key of the config file's option table.
    auto* port_add = port->add_subcommand("add", "add a port to the running vnetd");
    std::string add_kind;
    std::string add_name;
    std::map<std::string, std::string> add_settings;
    std::vector<std::string> add_set;
    std::string add_peer;
    port_add->add_option("kind", add_kind, "vhost-user, tap or null")->required();
    port_add->add_option("name", add_name, "the port's name")->required();
    for (const char* key :
         {"socket-path", "queue-pairs", "socket-owner", "socket-group", "socket-mode", "mtu", "tap",
          "switch", "vlan", "trunk", "allowed-macs"}) {
        port_add->add_option_function<std::string>(
            std::string("--") + key,
            [&add_settings, key](const std::string& v) { add_settings[key] = v; },
            std::string("the [[port]] key ") + key);
    }
    for (const char* key : {"client", "persist"}) {
        port_add->add_flag_function(
            std::string("--") + key, [&add_settings, key](int64_t) { add_settings[key] = "on"; },
            std::string("the [[port]] key ") + key);
    }
    port_add->add_option("--peer", add_peer, "cross-connect it to this port (in none yet)");
    port_add->add_option("--set", add_set, "KEY=VALUE: any other [[port]] key");
    auto* port_del = port->add_subcommand("del", "remove a port (its guest is disconnected)");
    std::string del_name;
    port_del->add_option("name", del_name, "the port's name")->required();
    auto* reload = app.add_subcommand(
        "reload", "re-read vnetd's config file and apply what changed (as SIGHUP does)");
    auto* upgrade = app.add_subcommand(
        "upgrade", "upgrade in place: a new vnetd takes over every port, the old one exits 0");
    std::string upgrade_binary;
    upgrade->add_option("--binary", upgrade_binary,
                        "the new vnetd (default: the running one's path, as it is on disk now)");
    auto* port_set = port->add_subcommand("set", "change a port's settings at run time");
    std::string set_name;
    std::optional<uint32_t> set_rate;
    std::optional<uint32_t> set_burst;
    port_set->add_option("name", set_name, "the port")->required();
    port_set->add_option("--ingress-policing-rate", set_rate,
                         "police what the port sends to this rate, kbit/s (0 = off)");
    port_set->add_option("--ingress-policing-burst", set_burst,
                         "the policing bucket, kbit (0 = the default, 8000)");
    auto* sw = app.add_subcommand("switch", "L2 switches")->require_subcommand(1);
    auto* switch_list = sw->add_subcommand("list", "the switches, their ports and counters");
    // switch add NAME [options]: the flags are the [[switch]] keys with dashes.
    auto* switch_add = sw->add_subcommand("add", "add a switch to the running vnetd");
    std::string switch_add_name;
    std::map<std::string, std::string> switch_settings;
    switch_add->add_option("name", switch_add_name, "the switch's name")->required();
    for (const char* key : {"mac-aging-s", "mac-table-size", "destination-hold-us"}) {
        switch_add->add_option_function<std::string>(
            std::string("--") + key,
            [&switch_settings, key](const std::string& v) { switch_settings[key] = v; },
            std::string("the [[switch]] key ") + key);
    }
    auto* switch_del = sw->add_subcommand("del", "remove a switch (it must have no ports)");
    std::string switch_del_name;
    switch_del->add_option("name", switch_del_name, "the switch's name")->required();
    // switch uplink ...: a switch's VXLAN uplink is a port of type vxlan
    // (named uplink-S unless --name says otherwise); its peers change in place.
    auto* uplink = sw->add_subcommand("uplink", "a switch's VXLAN uplink to other hosts")
                       ->require_subcommand(1);
    auto* uplink_add = uplink->add_subcommand("add", "give a switch a VXLAN uplink");
    std::string uplink_switch;
    std::string uplink_kind;
    std::string uplink_name;
    std::map<std::string, std::string> uplink_settings;
    std::vector<std::string> uplink_remotes;
    uplink_add->add_option("switch", uplink_switch, "the switch")->required();
    uplink_add->add_option("kind", uplink_kind, "vxlan")
        ->required()
        ->check(CLI::IsMember({"vxlan"}));
    uplink_add->add_option("--name", uplink_name, "the port's name (default: uplink-SWITCH)");
    for (const auto& [flag, key] :
         std::initializer_list<std::pair<const char*, const char*>>{{"--vni", "vni"},
                                                                    {"--local", "vxlan_local"},
                                                                    {"--dstport", "vxlan_port"},
                                                                    {"--dev", "vxlan_dev"},
                                                                    {"--mtu", "mtu"}}) {
        auto* o = uplink_add->add_option_function<std::string>(
            flag, [&uplink_settings, key](const std::string& v) { uplink_settings[key] = v; },
            std::string("the [[port]] key ") + key);
        if (std::string_view(flag) == "--vni") {
            o->required();
        }
    }
    uplink_add->add_option("--remote", uplink_remotes, "a remote host's tunnel address (repeat)");
    auto* uplink_del = uplink->add_subcommand("del", "remove a switch's VXLAN uplink");
    uplink_del->add_option("switch", uplink_switch, "the switch")->required();
    auto* uplink_peer =
        uplink->add_subcommand("peer", "the uplink's remote hosts")->require_subcommand(1);
    std::string peer_address;
    auto* peer_add = uplink_peer->add_subcommand("add", "send floods to one more host");
    auto* peer_del = uplink_peer->add_subcommand("del", "stop sending to a host");
    for (CLI::App* c : {peer_add, peer_del}) {
        c->add_option("switch", uplink_switch, "the switch")->required();
        c->add_option("address", peer_address, "the remote host's tunnel address")->required();
    }
    auto* mac = app.add_subcommand("mac", "MAC tables")->require_subcommand(1);
    auto* mac_list = mac->add_subcommand("list", "the learned MACs");
    std::string mac_switch;
    mac_list->add_option("--switch", mac_switch, "only this switch's MACs");
    auto* show = app.add_subcommand(
        "show", "a port's socket, features, memory, rings, counters (VPP show vhost-user)");
    std::string show_name;
    show->add_option("name", show_name, "only this port");
    auto* call = app.add_subcommand("call", "call any method with JSON params (for scripts)");
    std::string call_method;
    std::string call_params = "{}";
    call->add_option("method", call_method, "method name")->required();
    call->add_option("params", call_params, "params as a JSON object or array");
    CLI11_PARSE(app, argc, argv);

    try {
        ControlClient client(socket, std::chrono::seconds(timeout_s));
        if (*version) {
            const json r = client.call("version");
            std::cout << (as_json ? r.dump(2) : text_of(r["version"])) << "\n";
        } else if (*methods) {
            const json r = client.call("help");
            if (as_json) {
                std::cout << r.dump(2) << "\n";
            } else {
                TextTable t({"method", "what it does"});
                for (const auto& [name, help] : r.items()) {
                    t.add_row({name, text_of(help)});
                }
                t.print(std::cout);
            }
        } else if (*port_list) {
            const json r = client.call("port.list");
            if (as_json) {
                std::cout << r.dump(2) << "\n";
            } else {
                print_ports(r);
            }
        } else if (*port_add) {
            json params{{"name", add_name}, {"type", add_kind}};
            for (const auto& [key, value] : add_settings) {
                std::string k = key;
                std::replace(k.begin(), k.end(), '-', '_');
                params[k] = value;
            }
            for (const std::string& kv : add_set) {
                const size_t eq = kv.find('=');
                if (eq == std::string::npos || eq == 0) {
                    std::cerr << "vnetctl: --set wants KEY=VALUE, not '" << kv << "'\n";
                    return 2;
                }
                params[kv.substr(0, eq)] = kv.substr(eq + 1);
            }
            if (!add_peer.empty()) {
                params["peer"] = add_peer;
            }
            if (params.contains("socket_path")) {
                params["socket_path"] = absolute_path(params["socket_path"].get<std::string>());
            }
            const json r = client.call("port.add", params);
            std::cout << (as_json ? r.dump(2) : "port " + add_name + " added") << "\n";
        } else if (*port_del) {
            const json r = client.call("port.del", json{{"name", del_name}});
            std::cout << (as_json ? r.dump(2) : "port " + del_name + " removed") << "\n";
        } else if (*port_set) {
            json params{{"name", set_name}};
            if (set_rate) {
                params["ingress_policing_rate"] = *set_rate;
            }
            if (set_burst) {
                params["ingress_policing_burst"] = *set_burst;
            }
            const json r = client.call("port.set", params);
            if (as_json) {
                std::cout << r.dump(2) << "\n";
            } else {
                TextTable t({"port", "ingress_policing_rate", "ingress_policing_burst"});
                t.add_row({text_of(r.value("name", json())),
                           text_of(r.value("ingress_policing_rate", json())),
                           text_of(r.value("ingress_policing_burst", json()))});
                t.print(std::cout);
            }
        } else if (*switch_list) {
            const json r = client.call("switch.list");
            as_json ? void(std::cout << r.dump(2) << "\n") : print_switches(r);
        } else if (*switch_add) {
            json params{{"name", switch_add_name}};
            for (const auto& [key, value] : switch_settings) {
                std::string k = key;
                std::replace(k.begin(), k.end(), '-', '_');
                params[k] = value;
            }
            const json r = client.call("switch.add", params);
            std::cout << (as_json ? r.dump(2) : "switch " + switch_add_name + " added") << "\n";
        } else if (*switch_del) {
            const json r = client.call("switch.del", json{{"name", switch_del_name}});
            std::cout << (as_json ? r.dump(2) : "switch " + switch_del_name + " removed") << "\n";
        } else if (*uplink_add) {
            const std::string name = uplink_name.empty() ? "uplink-" + uplink_switch : uplink_name;
            json params{{"name", name}, {"type", uplink_kind}, {"switch", uplink_switch}};
            for (const auto& [key, value] : uplink_settings) {
                params[key] = value;
            }
            if (!uplink_remotes.empty()) {
                params["vxlan_remote"] = uplink_remotes;
            }
            const json r = client.call("port.add", params);
            std::cout << (as_json ? r.dump(2)
                                  : "switch " + uplink_switch + ": vxlan uplink " + name + " added")
                      << "\n";
        } else if (*uplink_del) {
            std::string name;
            for (const json& p : client.call("port.list")) {
                if (p.value("type", "") == "vxlan" && p.value("switch", "") == uplink_switch) {
                    name = p["name"].get<std::string>();
                }
            }
            if (name.empty()) {
                std::cerr << "vnetctl: switch '" << uplink_switch << "' has no uplink\n";
                return 1;
            }
            const json r = client.call("port.del", json{{"name", name}});
            std::cout << (as_json ? r.dump(2)
                                  : "switch " + uplink_switch + ": uplink " + name + " removed")
                      << "\n";
        } else if (*peer_add || *peer_del) {
            const json r = client.call(*peer_add ? "uplink.peer.add" : "uplink.peer.del",
                                       json{{"switch", uplink_switch}, {"address", peer_address}});
            std::cout << (as_json ? r.dump(2)
                                  : "switch " + uplink_switch + ": peer " + peer_address +
                                        (*peer_add ? " added" : " removed"))
                      << "\n";
        } else if (*mac_list) {
            const json r = client.call(
                "mac.list", mac_switch.empty() ? json::object() : json{{"switch", mac_switch}});
            as_json ? void(std::cout << r.dump(2) << "\n") : print_macs(r);
        } else if (*stats) {
            const bool watch = stats->count("--watch") > 0;
            if (watch && watch_s <= 0) {
                watch_s = 1;
            }
            json before = client.call("stats");
            if (!watch || as_json) {
                as_json ? void(std::cout << before.dump(2) << "\n")
                        : print_stats(before, nullptr, 0);
            }
            while (watch) {
                std::this_thread::sleep_for(std::chrono::duration<double>(watch_s));
                json now = client.call("stats");
                if (as_json) {
                    std::cout << now.dump() << "\n";
                } else {
                    std::cout << "\n";
                    print_stats(now, &before, watch_s);
                }
                std::cout.flush();
                before = std::move(now);
            }
        } else if (*upgrade) {
            const json r =
                client.call("upgrade", upgrade_binary.empty()
                                           ? json::object()
                                           : json{{"binary", absolute_path(upgrade_binary)}});
            if (as_json) {
                std::cout << r.dump(2) << "\n";
            } else {
                std::cout << "upgraded: pid " << r["pid"] << " (" << r["binary"].get<std::string>()
                          << ") took over in " << r["handover_ms"] << " ms\n";
            }
        } else if (*reload) {
            const json r = client.call("reload");
            if (as_json) {
                std::cout << r.dump(2) << "\n";
            } else {
                std::cout << "removed: " << (r["removed"].empty() ? "-" : r["removed"].dump())
                          << "\nadded: " << (r["added"].empty() ? "-" : r["added"].dump())
                          << "\nswitches removed: "
                          << (r.value("switches_removed", json::array()).empty()
                                  ? "-"
                                  : r["switches_removed"].dump())
                          << "\nswitches added: "
                          << (r.value("switches_added", json::array()).empty()
                                  ? "-"
                                  : r["switches_added"].dump())
                          << "\noptions: " << (r["options"].empty() ? "-" : r["options"].dump())
                          << "\n";
            }
        } else if (*show) {
            const json r = client.call(
                "port.show", show_name.empty() ? json::object() : json{{"name", show_name}});
            as_json ? void(std::cout << r.dump(2) << "\n")
                    : vnet::vnetctl::print_show(r, std::cout);
        } else if (*call) {
            const json params = json::parse(call_params, nullptr, false);
            if (params.is_discarded() || !(params.is_object() || params.is_array())) {
                std::cerr << "vnetctl: params must be a JSON object or array, not '" << call_params
                          << "'\n";
                return 2;
            }
            std::cout << client.call(call_method, params).dump(2) << "\n";
        }
    } catch (const vnet::rpc_client::ControlError& e) {
        std::cerr << "vnetctl: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
