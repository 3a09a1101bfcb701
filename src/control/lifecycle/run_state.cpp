#include "control/lifecycle/run_state.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

#include "common/unique_fd.hpp"
#include "control/config/option_table.hpp"

namespace vnet::control {
namespace {

// Bumped when an item's shape changes; a file of another version is refused
// like any file that does not parse (set aside, vnetd starts without it).
constexpr int kRunStateVersion = 1;

// Ordered both ways: the settings are read in the order they were written
// (the option table's), as a config file's keys are.
using Json = nlohmann::ordered_json;

bool applies_to(const OptionSpec& o, PortType type) {
    return !o.port_type || *o.port_type == type;
}

// The rows of `scope` whose text differs between `config`/`port` and the
// same for a new item: only what was set, so a default changed in a later
// vnetd applies to the items it restores, as to the config file's.
Settings changed_settings(OptionScope scope, const Config& config, const PortConfig* port,
                          const Config& base_config, const PortConfig* base_port) {
    Settings out;
    for (const OptionSpec& o : option_table()) {
        if (o.scope != scope || (port != nullptr && !applies_to(o, port->type()))) {
            continue;
        }
        std::string text = o.get(config, port);
        if (text != o.get(base_config, base_port)) {
            out.emplace_back(std::string(o.key), std::move(text));
        }
    }
    return out;
}

Json settings_json(const Settings& settings) {
    Json j = Json::object();
    for (const auto& [key, text] : settings) {
        j[key] = text;
    }
    return j;
}

[[noreturn]] void bad(const std::string& what) {
    throw std::invalid_argument(what);
}

std::string string_member(const Json& item, const char* key, const std::string& where,
                          bool required = true) {
    const auto it = item.find(key);
    if (it == item.end()) {
        if (required) {
            bad(where + " has no \"" + key + "\"");
        }
        return {};
    }
    if (!it->is_string()) {
        bad(where + ": \"" + key + "\" must be a string");
    }
    return it->get<std::string>();
}

Settings settings_member(const Json& item, const std::string& where) {
    Settings out;
    const auto it = item.find("settings");
    if (it == item.end()) {
        return out;
    }
    if (!it->is_object()) {
        bad(where + ": \"settings\" must be an object");
    }
    for (const auto& [key, value] : it->items()) {
        if (!value.is_string()) {
            bad(where + ": setting \"" + key + "\" must be a string");
        }
        out.emplace_back(key, value.get<std::string>());
    }
    return out;
}

// The items of the array `key` (none when absent), each an object.
const Json& array_member(const Json& root, const char* key) {
    static const Json none = Json::array();
    const auto it = root.find(key);
    if (it == root.end()) {
        return none;
    }
    if (!it->is_array()) {
        bad(std::string("\"") + key + "\" must be an array");
    }
    for (const Json& item : *it) {
        if (!item.is_object()) {
            bad(std::string("\"") + key + "\" must hold objects");
        }
    }
    return *it;
}

[[noreturn]] void fail(const std::string& step, const std::string& path) {
    throw std::system_error(errno, std::generic_category(), step + " " + path);
}

std::string parent_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

RunStateSwitch run_state_switch(const SwitchConfig& config) {
    // The switch rows read the last switch of a Config.
    Config state;
    state.switches.push_back(config);
    Config base;
    base.switches.push_back(switch_from_settings(config.name, {}));
    return {config.name, changed_settings(OptionScope::switch_, state, nullptr, base, nullptr)};
}

RunStatePort run_state_port(const PortConfig& config, const std::string& peer) {
    const std::string type = to_string(config.type());
    Config scratch;
    const PortConfig base = port_from_settings(config.name, type, {}, scratch);
    return {config.name, type, peer,
            changed_settings(OptionScope::port, Config{}, &config, Config{}, &base)};
}

std::string run_state_text(const RunState& state) {
    Json root;
    root["version"] = kRunStateVersion;
    root["switches"] = Json::array();
    for (const RunStateSwitch& s : state.switches) {
        root["switches"].push_back({{"name", s.name}, {"settings", settings_json(s.settings)}});
    }
    root["ports"] = Json::array();
    for (const RunStatePort& p : state.ports) {
        Json j{{"name", p.name}, {"type", p.type}};
        if (!p.peer.empty()) {
            j["peer"] = p.peer;
        }
        j["settings"] = settings_json(p.settings);
        root["ports"].push_back(std::move(j));
    }
    return root.dump(2) + "\n";
}

RunState parse_run_state(std::string_view text) {
    Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
        bad("not JSON");
    }
    if (!root.is_object()) {
        bad("not a JSON object");
    }
    if (!root.contains("version") || root["version"] != kRunStateVersion) {
        bad("\"version\" must be " + std::to_string(kRunStateVersion));
    }
    RunState state;
    for (const Json& item : array_member(root, "switches")) {
        const std::string where = "switch " + std::to_string(state.switches.size() + 1);
        state.switches.push_back(
            {string_member(item, "name", where), settings_member(item, where)});
    }
    for (const Json& item : array_member(root, "ports")) {
        const std::string where = "port " + std::to_string(state.ports.size() + 1);
        state.ports.push_back(
            {string_member(item, "name", where), string_member(item, "type", where),
             string_member(item, "peer", where, false), settings_member(item, where)});
    }
    return state;
}

void write_run_state(const std::string& path, const RunState& state) {
    const std::string text = run_state_text(state);
    const std::string tmp = path + ".tmp";
    {
        UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (!fd) {
            fail("open", tmp);
        }
        for (size_t done = 0; done < text.size();) {
            const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
            if (n < 0 && errno != EINTR) {
                fail("write", tmp);
            }
            done += n > 0 ? static_cast<size_t>(n) : 0;
        }
        if (::fsync(fd.get()) != 0) {
            fail("fsync", tmp);
        }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        fail("rename " + tmp + " to", path);
    }
    const std::string dir = parent_of(path);
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd || ::fsync(dir_fd.get()) != 0) {
        fail("fsync", dir);
    }
}

std::optional<RunState> read_run_state(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT) {
            return std::nullopt;
        }
        fail("open", path);
    }
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail("read", path);
        }
        text.append(buf, static_cast<size_t>(n));
    }
    return parse_run_state(text);
}

std::string set_aside_run_state(const std::string& path) {
    const std::string aside = path + ".bad";
    if (::rename(path.c_str(), aside.c_str()) != 0) {
        fail("rename " + path + " to", aside);
    }
    return aside;
}

}  // namespace vnet::control
