#include "text_table.hpp"

#include <algorithm>
#include <cctype>

namespace vnet::vnetctl {
namespace {

bool is_number(const std::string& s) {
    return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }) &&
           std::all_of(s.begin(), s.end(),
                       [](unsigned char c) { return std::isdigit(c) || c == '.' || c == '-'; });
}

}  // namespace

void TextTable::print(std::ostream& out) const {
    std::vector<size_t> width(header_.size());
    for (size_t c = 0; c < header_.size(); ++c) {
        width[c] = header_[c].size();
        for (const auto& row : rows_) {
            if (c < row.size()) {
                width[c] = std::max(width[c], row[c].size());
            }
        }
    }
    auto print_row = [&](const std::vector<std::string>& row) {
        std::string line;
        for (size_t c = 0; c < header_.size(); ++c) {
            const std::string cell = c < row.size() ? row[c] : "";
            const std::string pad(width[c] - cell.size(), ' ');
            line += c == 0 ? "" : "  ";
            line += is_number(cell) ? pad + cell : cell + pad;
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out << line << "\n";
    };
    print_row(header_);
    for (const auto& row : rows_) {
        print_row(row);
    }
}

}  // namespace vnet::vnetctl
