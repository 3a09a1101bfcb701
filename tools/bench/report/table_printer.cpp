#include "report/table_printer.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <string_view>

namespace vnet::bench {
namespace {

// Joins pieces with append(): chains of std::string + trip a g++ 12
// -Wrestrict false positive at -O3.
std::string concat(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (std::string_view p : parts) {
        out.append(p);
    }
    return out;
}

std::string format_number(double v, const Column& column) {
    char buf[64];
    if (column.kind == ColumnKind::gain) {
        std::snprintf(buf, sizeof(buf), "%+.1f%%", v);
    } else if (column.unit == "%") {  // a share: lost frames, CPU
        std::snprintf(buf, sizeof(buf), "%.1f%%", v);
    } else if (column.kind == ColumnKind::ratio || column.unit == "x") {
        std::snprintf(buf, sizeof(buf), "%.2fx", v);
    } else if (column.unit == "Mpps") {
        std::snprintf(buf, sizeof(buf), "%.3f", v);
    } else if (column.unit == "Gbit/s") {
        std::snprintf(buf, sizeof(buf), "%.2f", v);
    } else {
        std::snprintf(buf, sizeof(buf), "%.4g", v);
    }
    return buf;
}

}  // namespace

std::string format_cell(const Cell& cell, const Column& column) {
    if (!cell.has_number()) {
        return cell.is_not_applicable() ? "-" : "n/a";
    }
    std::string s = format_number(cell.median(), column);
    if (cell.measured() && cell.samples().size() > 1) {
        // append() rather than a chain of + : g++ 12 -Wrestrict false positive.
        s.append(" (").append(format_number(cell.min(), column));
        s.append("-").append(format_number(cell.max(), column)).append(")");
    }
    return s;
}

std::string format_table(const Table& table) {
    // Numbered notes for the n/a reasons, each reason once.
    std::map<std::string, int> note_of;
    std::vector<std::string> reasons;
    std::vector<std::vector<std::string>> grid;
    std::vector<std::string> header{"row"};
    for (const Column& c : table.columns) {
        header.push_back(c.title);
    }
    grid.push_back(header);
    for (const Row& r : table.rows) {
        std::vector<std::string> line{r.label};
        for (size_t i = 0; i < table.columns.size(); ++i) {
            const Cell& cell = r.cells[i];
            std::string text = format_cell(cell, table.columns[i]);
            if (!cell.has_number() && !cell.is_not_applicable()) {
                auto [it, inserted] =
                    note_of.emplace(cell.na_reason(), static_cast<int>(reasons.size()) + 1);
                if (inserted) {
                    reasons.push_back(cell.na_reason());
                }
                text = concat({text, " [", std::to_string(it->second), "]"});
            }
            line.push_back(text);
        }
        grid.push_back(line);
    }
    std::vector<size_t> width(header.size(), 0);
    for (const auto& line : grid) {
        for (size_t i = 0; i < line.size(); ++i) {
            width[i] = std::max(width[i], line[i].size());
        }
    }
    std::string out = concat({"### ", table.id, ": ", table.title, "\n\n"});
    if (!table.command.empty()) {
        out += concat({"`", table.command, "`\n\n"});
    }
    auto emit = [&](const std::vector<std::string>& line) {
        out += "|";
        for (size_t i = 0; i < line.size(); ++i) {
            out += concat({" ", line[i], std::string(width[i] - line[i].size(), ' '), " |"});
        }
        out += "\n";
    };
    emit(grid[0]);
    out += "|";
    for (size_t w : width) {
        out.append(w + 2, '-').append("|");
    }
    out += "\n";
    for (size_t i = 1; i < grid.size(); ++i) {
        emit(grid[i]);
    }
    if (!reasons.empty() || !table.notes.empty()) {
        out += "\n";
    }
    for (size_t i = 0; i < reasons.size(); ++i) {
        out += concat({"[", std::to_string(i + 1), "] n/a: ", reasons[i], "\n"});
    }
    for (const std::string& n : table.notes) {
        out += concat({"- ", n, "\n"});
    }
    return out;
}

}  // namespace vnet::bench
