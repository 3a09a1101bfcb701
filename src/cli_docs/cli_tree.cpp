#include "cli_docs/cli_tree.hpp"

namespace vnet::cli_docs {

std::vector<const CLI::Option*> visible_flags(const CLI::App& app) {
    return app.get_options(
        [](const CLI::Option* o) { return !o->get_positional() && !o->get_group().empty(); });
}

std::vector<const CLI::Option*> positionals(const CLI::App& app) {
    return app.get_options([](const CLI::Option* o) { return o->get_positional(); });
}

std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); });
}

std::vector<std::string> spellings(const CLI::Option& option) {
    std::vector<std::string> out;
    for (const std::string& n : option.get_lnames()) {
        out.push_back("--" + n);
    }
    for (const std::string& n : option.get_snames()) {
        out.push_back("-" + n);
    }
    return out;
}

// A flag expects no value (CLI11 gives it expected(0)); --watch and the
// boolean table flags expect zero or one.
bool takes_value(const CLI::Option& option) {
    return option.get_expected_max() > 0;
}

bool value_optional(const CLI::Option& option) {
    return takes_value(option) && option.get_expected_min() == 0;
}

std::string value_name(const CLI::Option& option) {
    std::string name = option.get_type_name();
    // CLI11 appends a validator's description (":FILE", ":{a,b}") to the type.
    if (const size_t colon = name.find(':'); colon != std::string::npos && colon > 0) {
        name = name.substr(0, colon);
    }
    return name.empty() ? "VALUE" : name;
}

}  // namespace vnet::cli_docs
