#include "cli_docs/cli_docs.hpp"

#include <vector>

#include "cli_docs/cli_tree.hpp"

namespace vnet::cli_docs {
namespace {

std::string bold(std::string_view text) {
    return "\\fB" + roff_escape(text) + "\\fR";
}
std::string italic(std::string_view text) {
    return "\\fI" + roff_escape(text) + "\\fR";
}

// "\fB--socket\fR \fITEXT\fR", with every spelling.
std::string flag_usage(const CLI::Option& option) {
    std::string out;
    for (const std::string& s : spellings(option)) {
        out += (out.empty() ? "" : ", ") + bold(s);
    }
    if (value_optional(option)) {
        out += " [" + italic(value_name(option)) + "]";
    } else if (takes_value(option)) {
        out += " " + italic(value_name(option));
    }
    return out;
}

std::string describe(const CLI::Option& option) {
    std::string text = option.get_description();
    if (!option.get_default_str().empty()) {
        text += " (default: " + option.get_default_str() + ")";
    }
    return roff_escape(text) + "\n";
}

std::string flag_list(const CLI::App& app) {
    std::string out;
    for (const CLI::Option* o : visible_flags(app)) {
        out += ".TP\n" + flag_usage(*o) + "\n" + describe(*o);
    }
    return out;
}

// One .TP entry per command that runs (a group only leads to its own), its
// arguments and options indented below it.
void command_list(const CLI::App& app, const std::string& prefix, std::string& out) {
    for (const CLI::App* sub : visible_subcommands(app)) {
        const std::string path = prefix + " " + sub->get_name();
        if (!visible_subcommands(*sub).empty()) {
            command_list(*sub, path, out);
            continue;
        }
        std::string usage = bold(path);
        for (const CLI::Option* p : positionals(*sub)) {
            const std::string name = italic(p->get_name(true));
            usage += " " + (p->get_required() ? name : "[" + name + "]");
        }
        // Every command takes --help: the OPTIONS section says so once.
        std::vector<const CLI::Option*> flags = visible_flags(*sub);
        std::erase(flags, sub->get_help_ptr());
        if (!flags.empty()) {
            usage += " [" + italic("OPTIONS") + "]";
        }
        out += ".TP\n" + usage + "\n" + roff_escape(sub->get_description()) + "\n";
        const auto args = positionals(*sub);
        if (args.empty() && flags.empty()) {
            continue;
        }
        out += ".RS\n";
        for (const CLI::Option* p : args) {
            out += ".TP\n" + italic(p->get_name(true)) + "\n" + describe(*p);
        }
        for (const CLI::Option* o : flags) {
            out += ".TP\n" + flag_usage(*o) + "\n" + describe(*o);
        }
        out += ".RE\n";
    }
}

}  // namespace

std::string man_page(const CLI::App& app, const ManPageText& text) {
    std::string out = roff_header(text.name, text.section, text.summary);
    out += ".SH SYNOPSIS\n" + bold(text.name) + " [" + italic("OPTIONS") + "]";
    const bool has_commands = !visible_subcommands(app).empty();
    if (has_commands) {
        out += " " + italic("COMMAND") + " [" + italic("ARGS") + "]";
    }
    out += "\n.SH DESCRIPTION\n" + roff_paragraphs(text.description);
    out += ".SH OPTIONS\n" + flag_list(app);
    if (has_commands) {
        out += ".SH COMMANDS\n";
        command_list(app, std::string(text.name), out);
    }
    if (!text.files.empty()) {
        out += ".SH FILES\n" + roff_paragraphs(text.files);
    }
    if (!text.see_also.empty()) {
        out += ".SH SEE ALSO\n" + roff_escape(text.see_also) + "\n";
    }
    return out;
}

}  // namespace vnet::cli_docs
