// Prints a result table as Markdown (pastes straight into docs/), with
// measured cells as "median (min-max)" and n/a reasons as numbered notes.
#pragma once

#include <string>

#include "report/results.hpp"

namespace vnet::bench {

std::string format_table(const Table& table);
std::string format_cell(const Cell& cell, const Column& column);

}  // namespace vnet::bench
