#include "show_text.hpp"

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "membership_text.hpp"
#include "packet/queue_counter_table.hpp"
#include "text_table.hpp"

namespace vnet::vnetctl {
namespace {

using nlohmann::json;

std::string hex(const json& v) {
    if (!v.is_number_unsigned() && !v.is_number_integer()) {
        return "-";
    }
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v.get<uint64_t>()));
    return text;
}

std::string num(const json& v) {
    return v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump();
}

// A table, each line indented under its section.
void print_indented(const TextTable& t, std::ostream& out, const char* indent) {
    std::ostringstream text;
    t.print(text);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) {
        out << indent << line << "\n";
    }
}

void print_features(const char* what, const json& f, std::ostream& out) {
    if (!f.is_object()) {
        return;
    }
    out << "  " << what << " " << num(f["hex"]) << "\n";
    for (const json& name : f["names"]) {
        out << "    " << name.get<std::string>() << "\n";
    }
}

void print_memory(const json& regions, std::ostream& out) {
    out << "  memory regions: " << regions.size() << "\n";
    if (regions.empty()) {
        return;
    }
    TextTable t({"region", "guest_phys_addr", "size", "user_addr", "mmap_offset"});
    size_t i = 0;
    for (const json& r : regions) {
        t.add_row({std::to_string(i++), hex(r["guest_phys_addr"]), hex(r["size"]),
                   hex(r["user_addr"]), hex(r["mmap_offset"])});
    }
    print_indented(t, out, "    ");
}

std::string yes_no(const json& v) {
    return v.is_boolean() && v.get<bool>() ? "yes" : "no";
}

void print_ring(const json& r, std::ostream& out) {
    out << "  ring " << num(r["index"]) << " (" << num(r["virtqueue"]) << ", "
        << (r.value("direction", "") == "to_guest" ? "to the guest" : "from the guest")
        << ", queue pair " << num(r["queue_pair"]) << "): " << num(r["format"]) << ", size "
        << num(r["size"]) << ", started " << yes_no(r["started"]) << ", enabled "
        << yes_no(r["enabled"]) << ", running " << yes_no(r.value("running", json(false))) << "\n";
    out << "    desc " << hex(r["desc_user_addr"]) << "  avail " << hex(r["avail_user_addr"])
        << "  used " << hex(r["used_user_addr"]) << "\n";
    if (r.contains("last_avail_idx")) {
        out << "    last_avail_idx " << num(r["last_avail_idx"]) << "  last_used_idx "
            << num(r["last_used_idx"]);
        if (r.contains("cursor_encoding")) {
            out << "  (" << r["cursor_encoding"].get<std::string>() << ")";
        }
        // The guest's side of the ring, as the ring model names its fields.
        const json guest = r.value("guest", json::object());
        const char* separator = "\n    ";
        for (const auto& [name, value] : guest.items()) {
            out << separator << name << " " << (value.is_boolean() ? yes_no(value) : num(value));
            separator = "  ";
        }
        out << "\n";
    }
    if (r.contains("kicks")) {
        out << "    kicks " << num(r["kicks"]) << "  calls " << num(r["calls"]) << "  packets "
            << num(r["packets"]) << "  drops " << num(r["drops"]) << "  kick_fd "
            << yes_no(r["kick_fd"]) << "  call_fd " << yes_no(r["call_fd"])
            << (r.value("memory_lost", false) ? "  MEMORY LOST" : "")
            << (r.contains("inflight_resumed") ? "  inflight resumed " + num(r["inflight_resumed"])
                                               : std::string())
            << "\n";
    }
}

// The counter table's rows that ask for a column, in its order.
std::vector<const packet::QueueCounterRow*> shown_rows() {
    std::vector<const packet::QueueCounterRow*> rows;
    for (const packet::QueueCounterRow& row : packet::kQueueCounterRows) {
        if (row.show_column == packet::ShowColumn::yes) {
            rows.push_back(&row);
        }
    }
    return rows;
}

// The stats' queues: q 0 always, others only if they moved or dropped
// anything. A column per shown row of the counter table, then the drops of
// every reason summed (each reason that dropped any listed below).
void print_counters(const json& stats, std::ostream& out) {
    const std::vector<const packet::QueueCounterRow*> rows = shown_rows();
    std::vector<std::string> header{"q", "dir"};
    for (const packet::QueueCounterRow* row : rows) {
        header.emplace_back(row->name);
    }
    header.emplace_back("drops");
    TextTable t(std::move(header));
    std::vector<std::string> drops;
    for (const json& q : stats.value("queues", json::array())) {
        for (const char* dir : {"rx", "tx"}) {
            const json& c = q[dir];
            uint64_t dropped = 0;
            for (const auto& [reason, n] : c["drops"].items()) {
                dropped += n.get<uint64_t>();
                if (n.get<uint64_t>() != 0) {
                    drops.push_back("q" + num(q["queue"]) + " " + dir + " " + reason + " " +
                                    n.dump());
                }
            }
            if (q["queue"].get<int>() != 0 && c["packets"].get<uint64_t>() == 0 && dropped == 0) {
                continue;
            }
            std::vector<std::string> cells{num(q["queue"]), dir};
            for (const packet::QueueCounterRow* row : rows) {
                cells.push_back(
                    num(c.value(json::json_pointer(std::string(row->stats_pointer)), json())));
            }
            cells.push_back(std::to_string(dropped));
            t.add_row(std::move(cells));
        }
    }
    out << "  counters (rx: out of the port, tx: into it):\n";
    print_indented(t, out, "    ");
    out << "  drops by reason:" << (drops.empty() ? " none" : "") << "\n";
    for (const std::string& d : drops) {
        out << "    " << d << "\n";
    }
}

void print_port(const json& p, std::ostream& out) {
    out << "Port " << num(p["name"]) << " (" << num(p["type"]) << ", " << num(p["queue_pairs"])
        << " queue pair" << (p.value("queue_pairs", 0) == 1 ? "" : "s");
    if (p.contains("switch")) {
        out << ", switch " << num(p["switch"]);
    }
    if (p.contains("peer")) {
        out << ", peer " << num(p["peer"]);
    }
    out << ")\n";
    if (p.contains("switch")) {
        out << "  switch " << membership_text(p) << ", allowed MACs " << allowed_macs_text(p)
            << "\n";
    }
    if (p.contains("socket")) {
        out << "  socket " << num(p["socket"]["path"]) << " ("
            << (p["socket"].value("client", false) ? "client" : "server") << "), "
            << num(p["state"]);
        if (p.contains("broken_reason")) {
            out << ": " << num(p["broken_reason"]);
        }
        out << "\n";
    }
    if (p.contains("features")) {
        out << "  device status " << hex(p["device_status"]) << ", rings " << num(p["ring_format"])
            << "\n";
        print_features("features", p["features"], out);
        print_features("protocol features", p["protocol_features"], out);
        print_memory(p.value("memory", json::array()), out);
        if (p.contains("migration")) {
            const json& m = p["migration"];
            out << "  migration: dirty logging "
                << (m.value("dirty_logging", false) ? "on" : "off");
            if (m.value("dirty_logging", false)) {
                out << " (log " << num(m["log_bytes"]) << " bytes, " << num(m["pages_beyond_log"])
                    << " pages beyond it)";
            }
            out << ", " << num(m["rarp_announcements"]) << " RARP announcement(s) sent\n";
        }
        for (const json& r : p.value("rings", json::array())) {
            print_ring(r, out);
        }
    }
    const json stats = p.value("stats", json::object());
    if (stats.contains("tap")) {
        out << "  tap";
        for (const auto& [key, value] : stats["tap"].items()) {
            out << " " << key << " " << num(value);
        }
        out << "\n";
    }
    print_counters(stats, out);
}

}  // namespace

void print_show(const json& ports, std::ostream& out) {
    bool first = true;
    for (const json& p : ports) {
        if (!first) {
            out << "\n";
        }
        first = false;
        print_port(p, out);
    }
}

}  // namespace vnet::vnetctl
