#include "common/did_you_mean.hpp"

#include <algorithm>
#include <numeric>

namespace vnet {

size_t edit_distance(std::string_view a, std::string_view b) {
    // Three rows of the dynamic-programming table: the one two back is what
    // a transposition ("prot" for "port") is counted from.
    std::vector<size_t> before(b.size() + 1), above(b.size() + 1), row(b.size() + 1);
    std::iota(above.begin(), above.end(), size_t{0});
    for (size_t i = 1; i <= a.size(); ++i) {
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            row[j] = std::min(
                {above[j] + 1, row[j - 1] + 1, above[j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                row[j] = std::min(row[j], before[j - 2] + 1);
            }
        }
        std::swap(before, above);
        std::swap(above, row);
    }
    return above[b.size()];
}

std::optional<std::string_view> closest_word(std::string_view word,
                                             const std::vector<std::string_view>& candidates) {
    const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
    std::optional<std::string_view> best;
    size_t best_distance = limit + 1;
    for (std::string_view c : candidates) {
        const size_t d = edit_distance(word, c);
        if (d < best_distance && c != word) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
    const std::optional<std::string_view> best = closest_word(word, candidates);
    return best ? " (did you mean '" + std::string(*best) + "'?)" : std::string();
}

}  // namespace vnet
