// A plain-text table for vnetctl's default output: a header and rows of
// cells, each column as wide as its widest cell, numbers right-aligned.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace vnet::vnetctl {

class TextTable {
public:
    explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
    void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
    void print(std::ostream& out) const;

private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace vnet::vnetctl
