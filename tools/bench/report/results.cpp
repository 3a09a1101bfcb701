#include "report/results.hpp"

#include <algorithm>
#include <stdexcept>

namespace vnet::bench {

Cell Cell::number(double v) {
    Cell c;
    c.samples_ = {v};
    c.na_.clear();
    return c;
}

Cell Cell::not_available(std::string why) {
    Cell c;
    c.na_ = std::move(why);
    return c;
}

void Cell::add_sample(double v) {
    samples_.push_back(v);
    measured_ = true;
    na_.clear();
}

void Cell::set_not_available(std::string why) {
    // One failed repeat does not erase the repeats that worked.
    if (samples_.empty()) {
        na_ = std::move(why);
    }
}

double Cell::median() const {
    if (samples_.empty()) {
        return 0;
    }
    std::vector<double> v = samples_;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Cell::min() const {
    return samples_.empty() ? 0 : *std::min_element(samples_.begin(), samples_.end());
}

double Cell::max() const {
    return samples_.empty() ? 0 : *std::max_element(samples_.begin(), samples_.end());
}

nlohmann::json Cell::to_json() const {
    if (!has_number()) {
        return {{"na", na_}};
    }
    if (!measured_) {
        return {{"value", samples_.front()}};
    }
    return {{"median", median()}, {"min", min()}, {"max", max()}, {"samples", samples_}};
}

Cell ratio_cell(const Cell& a, const Cell& b) {
    if (!a.has_number()) {
        return Cell::not_available(a.na_reason());
    }
    if (!b.has_number()) {
        return Cell::not_available(b.na_reason());
    }
    if (b.median() == 0) {
        return Cell::not_available("divisor is 0");
    }
    return Cell::number(a.median() / b.median());
}

Cell gain_cell(const Cell& a, const Cell& b) {
    Cell r = ratio_cell(a, b);
    return r.has_number() ? Cell::number((r.median() - 1) * 100) : r;
}

Row& Table::add_row(std::string key, std::string label, bool peer) {
    Row r;
    r.key = std::move(key);
    r.label = std::move(label);
    r.peer = peer;
    r.cells.resize(columns.size());
    rows.push_back(std::move(r));
    return rows.back();
}

Row& Table::row(const std::string& key) {
    for (Row& r : rows) {
        if (r.key == key) {
            return r;
        }
    }
    throw std::logic_error("table " + id + " has no row " + key);
}

size_t Table::column_index(const std::string& key) const {
    for (size_t i = 0; i < columns.size(); ++i) {
        if (columns[i].key == key) {
            return i;
        }
    }
    throw std::logic_error("table " + id + " has no column " + key);
}

Cell& Table::cell(const std::string& row_key, const std::string& column_key) {
    return row(row_key).cells.at(column_index(column_key));
}

void Table::fill_unmeasured(const std::string& why) {
    for (Row& r : rows) {
        for (Cell& c : r.cells) {
            if (!c.has_number() && c.na_reason() == Cell::kNotMeasured) {
                c.set_not_available(why);
            }
        }
    }
}

namespace {

const char* kind_name(ColumnKind k) {
    switch (k) {
        case ColumnKind::seed:
            return "seed";
        case ColumnKind::ours:
            return "ours";
        case ColumnKind::peer:
            return "peer";
        case ColumnKind::ratio:
            return "ratio";
        case ColumnKind::gain:
            return "gain";
        case ColumnKind::info:
            return "info";
    }
    return "info";
}

}  // namespace

nlohmann::json Table::to_json() const {
    nlohmann::json j;
    j["id"] = id;
    j["title"] = title;
    j["unit"] = unit;
    j["command"] = command;
    j["columns"] = nlohmann::json::array();
    for (const Column& c : columns) {
        j["columns"].push_back(
            {{"key", c.key}, {"title", c.title}, {"kind", kind_name(c.kind)}, {"unit", c.unit}});
    }
    j["rows"] = nlohmann::json::array();
    for (const Row& r : rows) {
        nlohmann::json cells = nlohmann::json::object();
        for (size_t i = 0; i < columns.size(); ++i) {
            cells[columns[i].key] = r.cells[i].to_json();
        }
        j["rows"].push_back({{"key", r.key},
                             {"label", r.label},
                             {"peer", r.peer},
                             {"cells", cells},
                             {"extra", r.extra}});
    }
    j["notes"] = notes;
    return j;
}

}  // namespace vnet::bench
