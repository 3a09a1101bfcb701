#include "control/lifecycle/reload_summary.hpp"

namespace vnet::control {

std::string reload_summary(const nlohmann::json& done) {
    if (!done.is_object()) {
        return "nothing changed";
    }
    std::string out;
    auto names = [&](const char* key, const char* what) {
        const nlohmann::json list = done.value(key, nlohmann::json::array());
        if (!list.is_array() || list.empty()) {
            return;
        }
        out += (out.empty() ? "" : "; ") + std::string(what) + (list.size() == 1 ? " " : "s ");
        for (size_t i = 0; i < list.size(); ++i) {
            out += (i == 0 ? "" : ", ") +
                   (list[i].is_string() ? list[i].get<std::string>() : list[i].dump());
        }
    };
    names("switches_removed", "removed switch");
    names("removed", "removed port");
    names("switches_added", "added switch");
    names("added", "added port");
    const nlohmann::json options = done.value("options", nlohmann::json::object());
    if (options.is_object() && !options.empty()) {
        out += (out.empty() ? "" : "; ") + std::string("options");
        for (const auto& [key, value] : options.items()) {
            out += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
        }
    }
    return out.empty() ? "nothing changed" : out;
}

}  // namespace vnet::control
