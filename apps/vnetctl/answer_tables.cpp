#include "answer_tables.hpp"

#include <cstdio>
#include <iostream>
#include <map>
#include <vector>

#include "membership_text.hpp"
#include "text_table.hpp"

namespace vnet::vnetctl {

using nlohmann::json;

std::string text_of(const json& v) {
    if (v.is_null()) {
        return "-";
    }
    return v.is_string() ? v.get<std::string>() : v.dump();
}

void print_ports(const json& ports) {
    TextTable t(
        {"port", "type", "where", "queue pairs", "peer", "switch", "allowed macs", "connections"});
    for (const json& p : ports) {
        std::string where =
            text_of(p.contains("socket_path") ? p["socket_path"] : p.value("ifname", json()));
        if (p.value("type", "") == "vxlan") {
            // The socket datapath has no device: its UDP port stands for it.
            const std::string device = p.value("datapath", "") == "socket"
                                           ? "udp " + text_of(p["dstport"])
                                           : text_of(p["device"]);
            where = device + " vni " + text_of(p["vni"]) + " to ";
            const json& remotes = p["remotes"];
            for (size_t i = 0; i < remotes.size(); ++i) {
                where += (i == 0 ? "" : ",") + text_of(remotes[i]);
            }
            where += remotes.empty() ? "no peer" : "";
            if (p.value("evpn", false)) {
                where = device + " vni " + text_of(p["vni"]) + " evpn in " + text_of(p["bridge"]);
            }
        }
        t.add_row({text_of(p.value("name", json())), text_of(p.value("type", json())), where,
                   text_of(p.value("queue_pairs", json())), text_of(p.value("peer", json())),
                   membership_text(p), allowed_macs_text(p),
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

void print_workers(const json& workers) {
    TextTable t({"worker", "cpu", "mode", "queue pairs", "switches", "busy %", "busy s", "idle s"});
    for (const json& w : workers) {
        std::string queues;
        for (const json& q : w.value("queue_pairs", json::array())) {
            queues += (queues.empty() ? "" : ",") + text_of(q.value("port", json())) + ":" +
                      text_of(q.value("queue_pair", json()));
        }
        std::string switches;
        for (const json& sw : w.value("switches", json::array())) {
            switches += (switches.empty() ? "" : ",") + text_of(sw);
        }
        char busy[16];
        std::snprintf(busy, sizeof busy, "%.1f", 100.0 * w.value("busy_share", 0.0));
        char busy_s[24];
        std::snprintf(busy_s, sizeof busy_s, "%.3f", w.value("busy_s", 0.0));
        char idle_s[24];
        std::snprintf(idle_s, sizeof idle_s, "%.3f", w.value("idle_s", 0.0));
        t.add_row({text_of(w.value("worker", json())), text_of(w.value("cpu", json())),
                   text_of(w.value("mode", json())), queues.empty() ? "-" : queues,
                   switches.empty() ? "-" : switches, busy, busy_s, idle_s});
    }
    t.print(std::cout);
}

namespace {

uint64_t drops_of(const json& direction) {
    uint64_t sum = 0;
    if (auto drops = direction.find("drops"); drops != direction.end() && drops->is_object()) {
        for (auto it = drops->begin(); it != drops->end(); ++it) {
            sum += it->get<uint64_t>();
        }
    }
    return sum;
}

}  // namespace

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

}  // namespace vnet::vnetctl
