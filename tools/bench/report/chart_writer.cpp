#include "report/chart_writer.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "harness/process.hpp"

namespace vnet::bench {
namespace {

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        out += c == '"' ? '\'' : c;
    }
    return out + "\"";
}

// gnuplot's single-quoted strings: only ' needs doubling.
std::string gp_string(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        out += c == '\'' ? std::string("''") : std::string(1, c);
    }
    return out + "'";
}

std::vector<size_t> chart_columns(const Table& t) {
    std::vector<size_t> cols;
    for (size_t i = 0; i < t.columns.size(); ++i) {
        const Column& c = t.columns[i];
        const bool plotted =
            c.kind == ColumnKind::seed || c.kind == ColumnKind::ours || c.kind == ColumnKind::peer;
        if (plotted && c.unit == t.unit) {
            cols.push_back(i);
        }
    }
    return cols;
}

std::string write_data(const Table& t, const std::vector<size_t>& cols, const std::string& path) {
    std::ofstream out(path);
    out << "# " << t.id << ": " << t.title << "\n# row";
    for (size_t c : cols) {
        out << " | " << t.columns[c].title << " (median min max)";
    }
    out << "\n";
    for (const Row& r : t.rows) {
        out << quoted(r.label);
        for (size_t c : cols) {
            const Cell& cell = r.cells[c];
            if (cell.has_number()) {
                out << " " << cell.median() << " " << cell.min() << " " << cell.max();
            } else {
                out << " ? ? ?";
            }
        }
        out << "\n";
    }
    return path;
}

std::string write_script(const Table& t, const std::vector<size_t>& cols, const std::string& data,
                         const std::string& png, const std::string& path) {
    std::ofstream out(path);
    out << "set terminal pngcairo size 1200,650 font 'sans,10'\n"
        << "set output " << gp_string(png) << "\n"
        << "set title " << gp_string(t.id + ": " + t.title) << " noenhanced\n"
        << "set ylabel " << gp_string(t.unit) << "\n"
        << "set datafile missing '?'\n"
        << "set style data histogram\n"
        << "set style histogram errorbars gap 2 lw 1\n"
        << "set style fill solid 0.7 border -1\n"
        << "set boxwidth 0.9\n"
        << "set key top left noenhanced\n"
        << "set xtics rotate by -25 noenhanced\n"
        << "set yrange [0:*]\n"
        << "set grid ytics\n"
        << "set bmargin 8\n"
        << "set rmargin 12\n"
        << "plot ";
    for (size_t i = 0; i < cols.size(); ++i) {
        const size_t base = 2 + 3 * i;
        out << (i ? ", \\\n     " : "") << gp_string(data) << " using " << base << ":" << base + 1
            << ":" << base + 2 << (i == 0 ? ":xtic(1)" : "") << " title "
            << gp_string(t.columns[cols[i]].title);
    }
    out << "\n";
    return path;
}

}  // namespace

std::optional<std::string> charts_unavailable() {
    if (!find_program("gnuplot")) {
        return "gnuplot not found (apt-get install gnuplot-nox, or scripts/install-deps.sh)";
    }
    return std::nullopt;
}

ChartOutcome write_charts(const std::vector<Table>& tables, const std::string& dir) {
    ChartOutcome outcome;
    mkdir(dir.c_str(), 0755);
    for (const Table& t : tables) {
        const std::vector<size_t> cols = chart_columns(t);
        if (cols.empty()) {
            outcome.skipped.push_back(t.id + ": no column in " + t.unit);
            continue;
        }
        const std::string data = write_data(t, cols, dir + "/" + t.id + ".dat");
        const std::string png = dir + "/" + t.id + ".png";
        const std::string script = write_script(t, cols, data, png, dir + "/" + t.id + ".gp");
        ProcessSpec spec;
        spec.name = "gnuplot";
        spec.argv = {"gnuplot", script};
        CommandResult r = run_command(spec, 30);
        struct stat st;
        if (r.ok() && stat(png.c_str(), &st) == 0 && st.st_size > 0) {
            outcome.written.push_back(png);
        } else {
            outcome.skipped.push_back(t.id + ": gnuplot failed: " + r.output);
        }
    }
    return outcome;
}

}  // namespace vnet::bench
