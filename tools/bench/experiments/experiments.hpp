// The experiments: the seeds (reference/kernel-datapath.md §5) and the
// issue targets (ringwork), one file each.
// Each returns its table with every row of the seed present: rows it did
// not run (--quick) or could not run carry "n/a: <why>" in their cells.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "report/results.hpp"

namespace vnet::bench {

struct Experiment {
    const char* id;
    const char* summary;
    Table (*run)(BenchContext& ctx);
};

const std::vector<Experiment>& experiments();
const Experiment* find_experiment(const std::string& id);

Table run_seed004(BenchContext& ctx);
Table run_seed003(BenchContext& ctx);
Table run_seed002(BenchContext& ctx);
Table run_seed000(BenchContext& ctx);
Table run_rawlimit(BenchContext& ctx);
Table run_guestrx(BenchContext& ctx);
Table run_multiqueue(BenchContext& ctx);
Table run_ringwork(BenchContext& ctx);
Table run_vmswitch(BenchContext& ctx);
Table run_switchhol(BenchContext& ctx);
Table run_switchgso(BenchContext& ctx);
Table run_switchscale(BenchContext& ctx);
Table run_switchidle(BenchContext& ctx);
Table run_portadd(BenchContext& ctx);

// One measured cell of a table: run `measure` once per repeat.
struct Point {
    std::string row;
    std::string column;
    bool in_quick = true;  // also measured by --quick
    // Returns the value; throws MeasureError (or ProcessError) with the
    // reason the cell becomes n/a. `extra` lands in the row's JSON.
    std::function<double(nlohmann::json& extra)> measure;
};

// `measure`, which also adds the number it records as extra[`field`] (if
// any) to cell (`row`, `column`) of `table`: a point's second figure (a CPU
// cost beside a rate) kept in the same repeat as its first.
std::function<double(nlohmann::json& extra)> also_record(
    Table& table, std::string row, std::string column, std::string field,
    std::function<double(nlohmann::json& extra)> measure);

// Runs every point `ctx.repeats()` times, repeat-major (each repeat sweeps
// all points, so slow drift spreads over the rows instead of biasing one).
void run_points(BenchContext& ctx, Table& table, const std::vector<Point>& points);

// Runs an experiment's set-up and points; when the set-up itself fails
// (a namespace, a server), every cell not yet measured becomes n/a with the
// reason, so the table keeps all its rows. Interrupted passes through.
void run_guarded(Table& table, const std::function<void()>& body);

// The n/a reason of rows --quick skips.
inline constexpr const char* kSkippedInQuick = "not run in --quick (use --full)";

}  // namespace vnet::bench
