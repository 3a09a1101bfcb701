// One PNG bar chart per result table, drawn by gnuplot: a group of bars per
// row, one bar per seed/ours/peer column in the table's unit, with min-max
// error bars for measured cells. Writes <dir>/<id>.dat and <id>.gp next to
// the PNG, so a chart can be redrawn or restyled by hand.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/results.hpp"

namespace vnet::bench {

struct ChartOutcome {
    std::vector<std::string> written;  // PNG paths
    std::vector<std::string> skipped;  // "<id>: <why>"
};

// Returns the reason when charts cannot be drawn at all (no gnuplot).
std::optional<std::string> charts_unavailable();

ChartOutcome write_charts(const std::vector<Table>& tables, const std::string& dir);

}  // namespace vnet::bench
