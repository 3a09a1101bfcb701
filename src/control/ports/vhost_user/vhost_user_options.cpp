// A vhost-user port's own option rows: its socket and how it is made, and
// how whole frames are written into its guest. The option table
// (control/config/option_table.hpp) composes them with every other row.
#include <array>
#include <span>

#include "control/ports/vhost_user/vhost_user_settings.hpp"

#include "control/config/option_rows.hpp"

namespace vnet::control {

namespace {

constexpr std::array kRows = {
    OptionSpec{"socket_path",
               OptionScope::port,
               port_type_of<VhostUserSettings>(),
               "PATH",
               "the VM port's vhost-user socket",
               {},
               true,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VhostUserSettings>(p, "socket_path").socket_path = t;
               },
               [](const Config&, const PortConfig* p) {
                   return text_or_none(settings_or_default<VhostUserSettings>(p).socket_path);
               }},
    OptionSpec{"client",
               OptionScope::port,
               port_type_of<VhostUserSettings>(),
               "on|off",
               "connect to a listening front end instead of listening (reconnects forever)",
               {},
               true,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VhostUserSettings>(p, "client").client = parse_on_off("client", t);
               },
               [](const Config&, const PortConfig* p) {
                   return on_off(settings_or_default<VhostUserSettings>(p).client);
               }},
    VNET_KIND_BOOL(VhostUserSettings, streaming_stores,
                   "write whole GSO frames (16 KiB or more) from other guests into this guest's "
                   "buffers with non-temporal stores, past the worker's cache (1.3-2x faster VM "
                   "→ VM); `off` where this guest's vCPUs share the worker's CPU"),
    OptionSpec{"socket_owner",
               OptionScope::port,
               port_type_of<VhostUserSettings>(),
               "USER",
               "owner (user name or uid) of the listening socket",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VhostUserSettings>(p, "socket_owner").socket_owner =
                       parse_socket_owner(std::string(t));
               },
               [](const Config&, const PortConfig* p) {
                   return optional_number(settings_or_default<VhostUserSettings>(p).socket_owner);
               }},
    OptionSpec{"socket_group",
               OptionScope::port,
               port_type_of<VhostUserSettings>(),
               "GROUP",
               "group (name or gid) of the listening socket",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VhostUserSettings>(p, "socket_group").socket_group =
                       parse_socket_group(std::string(t));
               },
               [](const Config&, const PortConfig* p) {
                   return optional_number(settings_or_default<VhostUserSettings>(p).socket_group);
               }},
    OptionSpec{"socket_mode",
               OptionScope::port,
               port_type_of<VhostUserSettings>(),
               "OCTAL",
               "permissions of the listening socket, e.g. 0660",
               {},
               false,
               [](Config&, PortConfig* p, std::string_view t) {
                   settings_for<VhostUserSettings>(p, "socket_mode").socket_mode =
                       parse_mode("socket_mode", t);
               },
               [](const Config&, const PortConfig* p) {
                   return settings_or_default<VhostUserSettings>(p).socket_mode
                              ? octal(*settings_or_default<VhostUserSettings>(p).socket_mode)
                              : std::string();
               }},
};

}  // namespace

std::span<const OptionSpec> VhostUserSettings::options() {
    return kRows;
}

}  // namespace vnet::control
