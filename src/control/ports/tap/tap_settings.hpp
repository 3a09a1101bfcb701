// A tap port's own [[port]] keys (docs/USAGE.md "Ports", "XDP on the tap").
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace vnet::control {

struct Config;
struct OptionSpec;
struct PortConfig;

struct TapSettings {
    static constexpr std::string_view kind = "tap";
    // The kind's rows of the option table (tap_options.cpp).
    static std::span<const OptionSpec> options();

    std::string ifname;  // the `tap` key; empty: the port's name
    bool persist = false;
    bool napi = false;
    bool napi_frags = false;
    std::optional<unsigned> txqueuelen;
    // XDP on the tap (ports/tap/tap_xdp.hpp): "FILE[:SECTION]" (empty:
    // none), the attach mode, and the interface the program's
    // redirect_map[0] points at. Kept as written; validation checks.
    std::string xdp;
    std::string xdp_mode = "auto";
    std::string xdp_redirect;

    // The device's name and the XDP keys (whether FILE exists and holds
    // SECTION is found out when the program is loaded). Throws
    // std::invalid_argument naming the port.
    void validate(const PortConfig& port, const Config& config) const;
};

// A tap port's device: its `tap` key, else the port's name.
std::string tap_device_name(const PortConfig& port);

}  // namespace vnet::control
