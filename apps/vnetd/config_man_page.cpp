#include <string>

#include "cli_docs/cli_docs.hpp"
#include "control/config/option_table.hpp"
#include "generated_docs.hpp"

namespace vnet::vnetd {
namespace {

using control::OptionScope;
using control::OptionSpec;

constexpr std::string_view kDescription =
    R"(vnetd(8) reads its ports, cross-connects, switches and options from a TOML file given with
--config (the systemd unit gives /etc/vnetd/vnetd.toml), and reads it again on SIGHUP, `systemctl
reload vnetd` or `vnetctl reload`: ports added to the file are opened, ports removed are closed,
and options that can change at run time change. An unknown key, table or value is an error that
names the key and the file.

Every key below is also a command-line flag of vnetd: the key with dashes (tx_batch is
--tx-batch); a flag given with --config overrides the file. A port key given as a flag applies to
every port it fits.)";

constexpr std::string_view kExample = R"([daemon]
control_socket = "/run/vnetd/vnetd.ctl"

[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "/run/vnetd/vm0.sock"

[[port]]
name = "tap0"
type = "tap"
tap = "vm0tap"

[[connect]]
ports = ["vm0", "tap0"])";

struct TableText {
    OptionScope scope;
    std::string_view heading;
    std::string_view intro;
};

constexpr TableText kTables[] = {
    {OptionScope::daemon, "[daemon]", "The daemon's own settings: one table."},
    {OptionScope::datapath, "[datapath]",
     "How the workers move packets: one table, for every port."},
    {OptionScope::port, "[[port]]",
     "One entry per port. Every port has a name (unique) and a type: vhost-user (a virtual "
     "machine's virtio-net device), tap, null (discards what it is given) or vxlan. The keys "
     "marked with a type apply to ports of that type only."},
    {OptionScope::switch_, "[[switch]]",
     "One entry per L2 switch, with a name; a port joins it with its switch key instead of "
     "being cross-connected."},
};

std::string key_entry(const OptionSpec& o, const control::Config& defaults,
                      const control::PortConfig& port_defaults) {
    std::string head = "\\fB" + cli_docs::roff_escape(o.key) + "\\fR = \\fI" +
                       cli_docs::roff_escape(o.value_name) + "\\fR";
    if (o.port_type) {
        head += " (" + cli_docs::roff_escape(control::to_string(*o.port_type)) + ")";
    }
    std::string text(o.help);
    const std::string def = o.get(defaults, &port_defaults);
    if (!def.empty()) {
        text += " Default: " + def + ".";
    }
    if (o.scope != OptionScope::switch_) {
        text += " Flag: " + control::flag_of(o) +
                (o.flag_alias.empty() ? "" : " (or " + std::string(o.flag_alias) + ")") + ".";
    }
    return ".TP\n" + head + "\n" + cli_docs::roff_escape(text) + "\n";
}

}  // namespace

std::string config_man_page() {
    const control::Config defaults;
    const control::PortConfig port_defaults;
    std::string out = cli_docs::roff_header("vnetd.toml", 5, "configuration file of vnetd(8)") +
                      ".SH DESCRIPTION\n" + cli_docs::roff_paragraphs(kDescription);
    for (const TableText& table : kTables) {
        out += ".SS " + cli_docs::roff_escape(table.heading) + "\n" +
               cli_docs::roff_paragraphs(table.intro);
        for (const OptionSpec& o : control::option_table()) {
            if (o.scope == table.scope) {
                out += key_entry(o, defaults, port_defaults);
            }
        }
    }
    out += ".SS [[connect]]\n" +
           cli_docs::roff_paragraphs(
               "One entry per cross-connect: ports = [\"A\", \"B\"] joins two ports that are on "
               "no switch; what one receives, the other sends.");
    out += ".SH EXAMPLE\n.EX\n";
    for (size_t start = 0; start < kExample.size();) {
        size_t end = kExample.find('\n', start);
        end = end == std::string_view::npos ? kExample.size() : end;
        out += cli_docs::roff_escape(kExample.substr(start, end - start)) + "\n";
        start = end + 1;
    }
    out += ".EE\n.SH SEE ALSO\nvnetd(8), vnetctl(8)\n";
    return out;
}

}  // namespace vnet::vnetd
