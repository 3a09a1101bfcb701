// A tap port's own option rows: the device, how it is opened, and its XDP
// program (docs/USAGE.md "XDP on the tap"). The option table
// (control/config/option_table.hpp) composes them with every other row.
#include <array>
#include <span>

#include "control/ports/tap/tap_settings.hpp"

#include "control/config/option_rows.hpp"

namespace vnet::control {

namespace {

constexpr std::array kRows = {
    OptionSpec{"tap",
               OptionScope::port,
               port_type_of<TapSettings>(),
               "NAME",
               "tap device to open or create (repeat `--tap` for tap ↔ tap); default: the "
               "port's name",
               {},
               true,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "tap").ifname = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<TapSettings>(p).ifname);
               }},
    VNET_KIND_BOOL(TapSettings, persist, "keep created taps after exit"),
    VNET_KIND_BOOL(TapSettings, napi,
                   "open taps with `IFF_NAPI` (measured here: one-packet writes lose pps with it)"),
    OptionSpec{"napi_frags",
               OptionScope::port,
               port_type_of<TapSettings>(),
               "on|off",
               "also `IFF_NAPI_FRAGS` (turns napi on; upstream calls it \"very much test only\")",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "napi_frags").napi_frags =
                       parse_on_off("napi_frags", t);
                   settings_for<TapSettings>(p, "napi_frags").napi =
                       settings_for<TapSettings>(p, "napi_frags").napi ||
                       settings_for<TapSettings>(p, "napi_frags")
                           .napi_frags;  // tun needs IFF_NAPI with it
               },
               [](const Config&, const PortConfig* p) {
                   return on_off(settings_or_default<TapSettings>(p).napi_frags);
               }},
    OptionSpec{"txqueuelen",
               OptionScope::port,
               port_type_of<TapSettings>(),
               "N",
               "the tap's host → reader queue (kernel default 500)",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "txqueuelen").txqueuelen =
                       static_cast<unsigned>(parse_uint("txqueuelen", t, 1, 1u << 20));
               },
               [](const Config&, const PortConfig* p) {
                   return optional_number(settings_or_default<TapSettings>(p).txqueuelen);
               }},
    OptionSpec{"xdp", OptionScope::port, port_type_of<TapSettings>(), "FILE[:SECTION]",
               "an XDP program for the tap, attached before the first write (see \"XDP on the "
               "tap\")",
               "--tap-xdp", false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "xdp").xdp = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<TapSettings>(p).xdp);
               }},
    OptionSpec{"xdp_mode", OptionScope::port, port_type_of<TapSettings>(), "auto|native|generic",
               "how the program is attached: native first (auto), or only one way",
               "--tap-xdp-mode", false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "xdp_mode").xdp_mode = t;
               },
               [](const Config&, const PortConfig* p) {
                   return settings_or_default<TapSettings>(p).xdp_mode;
               }},
    OptionSpec{"xdp_redirect", OptionScope::port, port_type_of<TapSettings>(), "IFNAME",
               "the interface in the program's `redirect_map[0]`", "--tap-xdp-redirect", false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<TapSettings>(p, "xdp_redirect").xdp_redirect = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<TapSettings>(p).xdp_redirect);
               }},
};

}  // namespace

std::span<const OptionSpec> TapSettings::options() {
    return kRows;
}

}  // namespace vnet::control
