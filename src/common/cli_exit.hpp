// How every vnet binary ends a command line it could not take: CLI11 prints
// the help, the version or the error, and the exit status is the shell's
// convention (docs/USAGE.md "Exit status") rather than CLI11's own codes
// (106, 109, 114...): 0 for --help and --version, 2 for a usage error. A
// failure after parsing exits 1. A word CLI11 did not take gets a "did you
// mean" naming the nearest flag or subcommand where it stood.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "common/did_you_mean.hpp"

namespace vnet {

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

namespace detail {

// The deepest subcommand the command line chose ("vnetctl port lst": port).
inline const CLI::App* deepest_chosen(const CLI::App& app) {
    const CLI::App* at = &app;
    while (!at->get_subcommands().empty()) {
        at = at->get_subcommands().back();
    }
    return at;
}

inline void suggest_near_miss(const CLI::App& app, std::ostream& err) {
    const std::vector<std::string> left = app.remaining(true);
    if (left.empty()) {
        return;
    }
    const std::string& word = left.front();
    const CLI::App* at = deepest_chosen(app);
    std::vector<std::string> names;  // owns what `candidates` points at
    if (word.starts_with("--")) {
        for (const CLI::App* a = at; a != nullptr; a = a->get_parent()) {
            for (const CLI::Option* o : a->get_options()) {
                for (const std::string& n : o->get_lnames()) {
                    names.push_back("--" + n);
                }
            }
        }
    } else {
        for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; })) {
            names.push_back(sub->get_name());
        }
    }
    const std::vector<std::string_view> candidates(names.begin(), names.end());
    const std::string hint = did_you_mean(word.substr(0, word.find('=')), candidates);
    // CLI11 said "A subcommand is required" or "not expected": name the word.
    if (!hint.empty() || (!word.starts_with("-") && !names.empty())) {
        err << "unknown " << (word.starts_with("-") ? "option" : "subcommand") << " '" << word
            << "'" << hint << "\n";
    }
}

}  // namespace detail

inline int exit_status_of(const CLI::App& app, const CLI::ParseError& e) {
    if (app.exit(e) == 0) {
        return 0;  // --help, --version
    }
    detail::suggest_near_miss(app, std::cerr);
    return kExitUsage;
}

}  // namespace vnet
