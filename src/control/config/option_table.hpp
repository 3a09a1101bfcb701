// The one option table. Every option vnetd takes is a row here (a port
// kind's own rows are written beside its builder, control/ports/<kind>/
// <kind>_options.cpp, and composed in), and every place that names options
// reads the rows: the config file's keys (an
// unknown key is an error naming it and the file), the command-line flags
// (the key with dashes, so `tx_batch` is `--tx-batch`), the "datapath"
// object of the stats JSON and the final report, and the option table of
// docs/USAGE.md (a unit test keeps that table equal to markdown_table()).
// Defaults are the member initializers of Config, DatapathConfig,
// PortConfig and the kinds' settings structs: the table reads them, it does
// not repeat them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "control/config/config.hpp"
#include "control/rpc/param_schema.hpp"

namespace vnet::control {

enum class OptionScope : uint8_t {
    daemon,    // [daemon] table
    datapath,  // [datapath] table
    port,      // a [[port]] entry; as a flag, applied to every port it fits
    switch_,   // a [[switch]] entry (config file only: no flag)
};
const char* to_string(OptionScope s);

struct OptionSpec {
    std::string_view key;
    OptionScope scope;
    // A kind's own keys (its settings struct's): set on a port of another
    // kind they are refused; as a flag they apply to the ports of that kind.
    std::optional<PortType> port_type;
    // The value's shape in docs and --help: "N", "on|off", "FILE[:SECTION]".
    std::string_view value_name;
    std::string_view help;
    // Another flag spelling kept for compatibility (e.g. --cpu); empty if none.
    std::string_view flag_alias;
    // The flag builds the port itself on the command line (--socket-path,
    // --tap, ...): main() handles it, the table only documents it.
    bool identity = false;
    // Parses `text` into the config (`port` for port options). Throws
    // std::invalid_argument naming the key and the value.
    void (*set)(Config& config, PortConfig* port, std::string_view text);
    // The value as text: the default in the docs, the datapath in stats.
    std::string (*get)(const Config& config, const PortConfig* port);
};

std::span<const OptionSpec> option_table();
const OptionSpec* find_option(OptionScope scope, std::string_view key);
// "--tx-batch" for tx_batch.
std::string flag_of(const OptionSpec& option);
// Booleans read "on"/"off" (and true/false); for the flags of booleans
// given without a value.
bool is_boolean(const OptionSpec& option);

// The JSON a control method takes for the option (port.add, switch.add),
// from its value's shape: on|off, a list ("X,..."), a number ("N", a
// range, a unit) or text; a PATH must be absolute over the control socket.
rpc::ParamType param_type(const OptionSpec& option);

// Applies a flag's value to `config`: daemon and datapath options to the
// config, port options to every port they fit.
void apply_flag(Config& config, const OptionSpec& option, std::string_view text);

// The datapath options with their values, by key: stats JSON and the report.
nlohmann::json datapath_json(const Config& config);

// The Markdown table of every option for docs/USAGE.md.
std::string markdown_table();

}  // namespace vnet::control
