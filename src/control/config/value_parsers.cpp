#include "control/config/value_parsers.hpp"

#include <grp.h>
#include <pwd.h>

#include <charconv>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "dataplane/switch/mac_address.hpp"

namespace vnet::control {

[[noreturn]] void bad_value(std::string_view key, std::string_view text, std::string_view want) {
    throw std::invalid_argument(std::string(key) + " must be " + std::string(want) + ", not '" +
                                std::string(text) + "'");
}

uint64_t parse_uint(std::string_view key, std::string_view text, uint64_t min, uint64_t max) {
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < min || v > max) {
        bad_value(key, text, std::to_string(min) + ".." + std::to_string(max));
    }
    return v;
}

bool parse_on_off(std::string_view key, std::string_view text) {
    if (text == "on" || text == "true") {
        return true;
    }
    if (text == "off" || text == "false") {
        return false;
    }
    bad_value(key, text, "on or off");
}

mode_t parse_mode(std::string_view key, std::string_view text) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 8);
    if (ec != std::errc{} || end != text.data() + text.size() || v > 07777) {
        bad_value(key, text, "an octal mode such as 0660");
    }
    return static_cast<mode_t>(v);
}

std::string parse_metrics_address(std::string_view text) {
    if (text.empty()) {
        return {};
    }
    const size_t colon = text.rfind(':');
    uint16_t port = 0;
    const std::string_view digits =
        colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
        bad_value("metrics_address", text, "HOST:PORT, [IPv6]:PORT or :PORT");
    }
    return std::string(text);
}

std::vector<int> parse_cpu_list(std::string_view key, std::string_view text) {
    std::vector<int> cpus;
    size_t start = 0;
    while (start <= text.size() && !text.empty()) {
        size_t comma = text.find(',', start);
        std::string_view item = text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        cpus.push_back(static_cast<int>(parse_uint(key, item, 0, 4095)));
        if (comma == std::string_view::npos) {
            break;
        }
        start = comma + 1;
    }
    return cpus;
}

std::string cpu_list(const std::vector<int>& cpus) {
    std::string out;
    for (int c : cpus) {
        if (!out.empty()) {
            out += ',';  // two steps: g++ 12 -O3 warns falsely on "," + string
        }
        out += std::to_string(c);
    }
    return out;
}

std::vector<uint16_t> parse_vlan_list(std::string_view key, std::string_view text) {
    std::vector<uint16_t> vlans;
    for_each_item(text, [&](std::string_view item) {
        vlans.push_back(static_cast<uint16_t>(parse_uint(key, item, 1, 4094)));
    });
    return vlans;
}

std::vector<packet::MacAddress> parse_mac_list(std::string_view key, std::string_view text) {
    std::vector<packet::MacAddress> macs;
    for_each_item(text, [&](std::string_view item) {
        std::optional<packet::MacAddress> mac = dataplane::switching::parse_mac(item);
        if (!mac) {
            bad_value(key, item, "a MAC address such as 02:00:00:00:00:01");
        }
        macs.push_back(*mac);
    });
    return macs;
}

std::string octal(mode_t mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode));
    return buf;
}

std::string on_off(bool b) {
    return b ? "on" : "off";
}

uid_t parse_socket_owner(const std::string& user_or_uid, std::string_view what) {
    if (const passwd* pw = ::getpwnam(user_or_uid.c_str())) {
        return pw->pw_uid;
    }
    try {
        return static_cast<uid_t>(std::stoul(user_or_uid));
    } catch (const std::exception&) {
        throw std::invalid_argument(std::string(what) + " '" + user_or_uid +
                                    "' is no user name or uid");
    }
}

gid_t parse_socket_group(const std::string& group_or_gid, std::string_view what) {
    if (const group* gr = ::getgrnam(group_or_gid.c_str())) {
        return gr->gr_gid;
    }
    try {
        return static_cast<gid_t>(std::stoul(group_or_gid));
    } catch (const std::exception&) {
        throw std::invalid_argument(std::string(what) + " '" + group_or_gid +
                                    "' is no group name or gid");
    }
}

dataplane::WorkerMode parse_worker_mode(const std::string& s) {
    if (s == "event")
        return dataplane::WorkerMode::event;
    if (s == "poll")
        return dataplane::WorkerMode::poll;
    if (s == "adaptive")
        return dataplane::WorkerMode::adaptive;
    throw std::invalid_argument("mode must be adaptive, event or poll, not '" + s + "'");
}

}  // namespace vnet::control
