// "did you mean": the known word closest to a mistyped one, for the
// messages that refuse an unknown config key, flag or vnetctl subcommand.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vnet {

// Edits from one word to the other: single-character insertions,
// deletions, substitutions and swaps of neighbours ("prot" for "port";
// the optimal string alignment distance).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word`, if near enough to be a typo of it (at
// most a third of the word's length away, at least 1, at most 3); ties go
// to the earlier candidate.
std::optional<std::string_view> closest_word(std::string_view word,
                                             const std::vector<std::string_view>& candidates);

// " (did you mean 'x'?)", or "" when nothing is near.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace vnet
