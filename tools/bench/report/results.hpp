// The result of one experiment: a table with the seed's rows and columns.
// A cell is a measurement (every repeat's value: min/median/max), a single
// number (a published seed value, or a ratio of two medians), or "n/a" with
// the reason. Printing, JSON and charts all read this model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vnet::bench {

// What a column holds; the chart plots seed, ours and peer columns in the
// table's unit, the printer formats ratio and gain columns as such.
enum class ColumnKind { seed, ours, peer, ratio, gain, info };

struct Column {
    std::string key;
    std::string title;
    ColumnKind kind;
    std::string unit;  // "Mpps", "Gbit/s", "x", "%", "" (info)
};

class Cell {
public:
    static Cell number(double v);
    static Cell not_available(std::string why);
    static Cell not_applicable() { return not_available(kNotApplicable); }

    Cell() : na_(kNotMeasured) {}

    void add_sample(double v);
    void set_not_available(std::string why);

    bool has_number() const { return !samples_.empty(); }
    bool measured() const { return measured_; }
    double median() const;
    double min() const;
    double max() const;
    const std::vector<double>& samples() const { return samples_; }
    const std::string& na_reason() const { return na_; }
    bool is_not_applicable() const { return na_ == kNotApplicable; }

    nlohmann::json to_json() const;

    static constexpr const char* kNotApplicable = "not applicable to this row";
    static constexpr const char* kNotMeasured = "not measured";

private:
    std::vector<double> samples_;
    bool measured_ = false;  // samples are repeats, not one published/derived number
    std::string na_;
};

// a / b of two cells' medians, or n/a naming the missing side.
Cell ratio_cell(const Cell& a, const Cell& b);
// (a / b - 1) * 100.
Cell gain_cell(const Cell& a, const Cell& b);

struct Row {
    std::string key;
    std::string label;
    bool peer = false;  // a row measuring a peer, not vnetd
    std::vector<Cell> cells;
    nlohmann::json extra = nlohmann::json::object();  // vnetd counters etc.
};

struct Table {
    std::string id;
    std::string title;
    std::string unit;
    std::string command;  // what ran, in one line
    std::vector<Column> columns;
    std::vector<Row> rows;
    std::vector<std::string> notes;

    Row& add_row(std::string key, std::string label, bool peer = false);
    Row& row(const std::string& key);
    Cell& cell(const std::string& row_key, const std::string& column_key);
    size_t column_index(const std::string& key) const;
    // Every cell still "not measured" becomes n/a with this reason.
    void fill_unmeasured(const std::string& why);

    nlohmann::json to_json() const;
};

}  // namespace vnet::bench
