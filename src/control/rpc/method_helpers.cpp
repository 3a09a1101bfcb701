#include "control/rpc/method_helpers.hpp"

#include <algorithm>

namespace vnet::control {
namespace {

using nlohmann::json;

// A schema-checked option value as the text its row parses.
std::string setting_text(const json& value) {
    if (value.is_string()) {
        return value.get<std::string>();
    }
    if (value.is_boolean()) {
        return value.get<bool>() ? "on" : "off";
    }
    if (value.is_array()) {
        std::string out;
        for (const json& item : value) {
            if (!out.empty()) {
                out += ',';
            }
            out += setting_text(item);
        }
        return out;
    }
    return value.dump();  // a non-negative integer
}

}  // namespace

Settings settings_of(const json& params, std::initializer_list<std::string_view> structural) {
    Settings settings;
    if (!params.is_object()) {
        return settings;
    }
    for (const auto& [key, value] : params.items()) {
        if (std::find(structural.begin(), structural.end(), key) == structural.end()) {
            settings.emplace_back(key, setting_text(value));
        }
    }
    return settings;
}

}  // namespace vnet::control
