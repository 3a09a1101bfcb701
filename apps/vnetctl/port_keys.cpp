#include "port_keys.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "rpc_client/control_client.hpp"

namespace vnet::vnetctl {

namespace {

using nlohmann::json;

const json* row_of(const json& rows, const std::string& key) {
    for (const json& row : rows) {
        if (row.value("key", "") == key) {
            return &row;
        }
    }
    return nullptr;
}

}  // namespace

void add_key_words(const json& rows, const std::vector<std::string>& words, json& params) {
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string& word = words[i];
        if (word.size() < 3 || !word.starts_with("--")) {
            throw std::invalid_argument("'" + word +
                                        "' is not a --KEY (KIND and NAME come first, then the "
                                        "keys)");
        }
        const size_t eq = word.find('=');
        std::string key = word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        std::replace(key.begin(), key.end(), '-', '_');
        const json* row = row_of(rows, key);
        if (row == nullptr) {
            throw std::invalid_argument("vnetd has no [[port]] key '" + key +
                                        "' (vnetctl port add --help lists its keys)");
        }
        std::string value;
        if (eq != std::string::npos) {
            value = word.substr(eq + 1);
        } else if (i + 1 < words.size() && !words[i + 1].starts_with("--")) {
            value = words[++i];
        } else if (row->value("value", "") == "on|off") {
            value = "on";  // a switch given alone, as --client
        } else {
            throw std::invalid_argument("--" + word.substr(2) + " needs a value (" +
                                        row->value("value", "") + ")");
        }
        params[key] = value;
    }
}

std::string port_keys_help(const std::string& socket) {
    json rows;
    try {
        // Help should come at once: a wedged vnetd is not waited for.
        rpc_client::ControlClient client(socket, std::chrono::seconds(2));
        rows = client.call("options.list", {{"scope", "port"}});
    } catch (const rpc_client::ControlError& e) {
        return "KEYS: --KEY VALUE for each [[port]] key of the config file (vnetd.toml(5)); "
               "they are vnetd's and are listed here when it answers (" +
               std::string(e.what()) + ").";
    }
    std::string out = "KEYS (from vnetd at " + socket + "; --KEY VALUE, or --set KEY=VALUE):\n";
    for (const json& row : rows) {
        std::string head = "  " + row.value("flag", "") + " " + row.value("value", "");
        head.resize(std::max<size_t>(head.size() + 1, 34), ' ');
        const std::string kind = row.contains("kind") ? row.value("kind", "") + ": " : "";
        out += head + kind + row.value("help", "") + "\n";
    }
    return out;
}

}  // namespace vnet::vnetctl
