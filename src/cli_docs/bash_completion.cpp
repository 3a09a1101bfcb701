#include "cli_docs/cli_docs.hpp"

#include <algorithm>
#include <cctype>

#include "cli_docs/cli_tree.hpp"

namespace vnet::cli_docs {
namespace {

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& w : words) {
        out += (out.empty() ? "" : " ") + w;
    }
    return out;
}

// A value named like a path ("FILE", "PATH", "FILE[:SECTION]") completes as
// a file name; any other value has no list to offer.
bool is_path_value(const CLI::Option& option) {
    const std::string v = value_name(option);
    return v.find("FILE") != std::string::npos || v.find("PATH") != std::string::npos;
}

struct Level {
    std::string path;  // the subcommand words so far, "" at the top
    std::vector<std::string> commands;
    std::vector<std::string> flags;
};

void collect(const CLI::App& app, const std::string& path, std::vector<Level>& levels,
             std::vector<std::string>& value_flags, std::vector<std::string>& path_flags) {
    Level level{path, {}, {}};
    for (const CLI::Option* o : visible_flags(app)) {
        for (const std::string& s : spellings(*o)) {
            level.flags.push_back(s);
            if (takes_value(*o) && !value_optional(*o)) {
                (is_path_value(*o) ? path_flags : value_flags).push_back(s);
            }
        }
    }
    for (const CLI::App* sub : visible_subcommands(app)) {
        level.commands.push_back(sub->get_name());
    }
    levels.push_back(level);
    for (const CLI::App* sub : visible_subcommands(app)) {
        collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), levels,
                value_flags, path_flags);
    }
}

std::string unique_words(std::vector<std::string> words) {
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    return join(words);
}

}  // namespace

std::string bash_completion(const CLI::App& app, std::string_view program) {
    std::vector<Level> levels;
    std::vector<std::string> value_flags, path_flags;
    collect(app, "", levels, value_flags, path_flags);
    std::string fn = "_" + std::string(program);
    for (char& c : fn) {
        c = (std::isalnum(static_cast<unsigned char>(c)) != 0) ? c : '_';
    }

    std::string out = "# bash completion for " + std::string(program) +
                      ", written from its command line by `" + std::string(program) +
                      " --generate-doc bash-completion`\n";
    out += fn + "() {\n";
    out += "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n";
    // After an option that takes a value: a file name, or nothing to offer.
    out += "    case $prev in\n";
    if (!path_flags.empty()) {
        std::string pattern = unique_words(path_flags);
        std::replace(pattern.begin(), pattern.end(), ' ', '|');
        out += "    " + pattern +
               ")\n        COMPREPLY=($(compgen -f -- \"$cur\"))\n        return ;;\n";
    }
    if (!value_flags.empty()) {
        std::string pattern = unique_words(value_flags);
        std::replace(pattern.begin(), pattern.end(), ' ', '|');
        out += "    " + pattern + ")\n        return ;;\n";
    }
    out += "    esac\n";
    // The subcommand words typed so far: each word that extends a known
    // path; option values and arguments extend none.
    out += "    local path= i w\n";
    out += "    for ((i = 1; i < COMP_CWORD; i++)); do\n";
    out += "        w=${COMP_WORDS[i]}\n";
    out += "        case \"${path:+$path }$w\" in\n";
    std::string known;
    for (const Level& l : levels) {
        if (!l.path.empty()) {
            known += (known.empty() ? "" : "|") + ("\"" + l.path + "\"");
        }
    }
    if (!known.empty()) {
        out += "        " + known + ") path=\"${path:+$path }$w\" ;;\n";
    }
    out += "        esac\n";
    out += "    done\n";
    out += "    local words\n";
    out += "    case $path in\n";
    for (const Level& l : levels) {
        out += "    \"" + l.path + "\") words=\"" + join(l.commands) +
               (l.commands.empty() || l.flags.empty() ? "" : " ") + join(l.flags) + "\" ;;\n";
    }
    out += "    esac\n";
    out += "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n";
    out += "}\n";
    out += "complete -F " + fn + " " + std::string(program) + "\n";
    return out;
}

}  // namespace vnet::cli_docs
