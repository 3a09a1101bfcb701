// Option values as text, both ways: the parsers the option table's rows
// and the config file share, so a value is read (and refused) the same way
// from a flag, a config key or a control method, and the formatters that
// turn a field back into what a flag would say. Each parser throws
// std::invalid_argument naming the key (or `what`) and the bad value.
// Only value types here, no Config: the option table and the config file
// both depend on this file, not on each other.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/worker.hpp"
#include "packet/wire.hpp"

namespace vnet::control {

// Throws "KEY must be WANT, not 'TEXT'".
[[noreturn]] void bad_value(std::string_view key, std::string_view text, std::string_view want);

uint64_t parse_uint(std::string_view key, std::string_view text, uint64_t min, uint64_t max);
// "on"/"true" and "off"/"false".
bool parse_on_off(std::string_view key, std::string_view text);
// An octal mode such as 0660.
mode_t parse_mode(std::string_view key, std::string_view text);
// HOST:PORT, [IPv6]:PORT or :PORT (127.0.0.1:9464, [::1]:9464; port 0: any
// free one, which vnetd logs); empty: no endpoint.
std::string parse_metrics_address(std::string_view text);
// "0,2,4": CPU numbers.
std::vector<int> parse_cpu_list(std::string_view key, std::string_view text);
// "10,20,30": a list of VLAN ids.
std::vector<uint16_t> parse_vlan_list(std::string_view key, std::string_view text);
std::vector<packet::MacAddress> parse_mac_list(std::string_view key, std::string_view text);
// A user or group by name or number; `what` names it in the error.
uid_t parse_socket_owner(const std::string& user_or_uid, std::string_view what = "socket owner");
gid_t parse_socket_group(const std::string& group_or_gid, std::string_view what = "socket group");
dataplane::WorkerMode parse_worker_mode(const std::string& s);

// Calls `item` for each comma-separated item of `text` (none when empty).
template <class F>
void for_each_item(std::string_view text, F&& item) {
    for (size_t start = 0; !text.empty();) {
        const size_t comma = text.find(',', start);
        item(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (comma == std::string_view::npos) {
            return;
        }
        start = comma + 1;
    }
}

std::string octal(mode_t mode);
std::string on_off(bool b);
std::string cpu_list(const std::vector<int>& cpus);

// The items' texts joined by commas.
template <class T, class F>
std::string join(const std::vector<T>& items, F&& text) {
    std::string out;
    for (const T& item : items) {
        if (!out.empty()) {
            out += ',';  // two steps: g++ 12 -O3 warns falsely on "," + string
        }
        out += text(item);
    }
    return out;
}

}  // namespace vnet::control
