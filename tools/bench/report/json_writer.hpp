// The --json document: the run's setup (mode, CPUs, tools, vnetd's flags)
// and every table (results.hpp's to_json).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/bench_context.hpp"
#include "report/results.hpp"

namespace vnet::bench {

nlohmann::json run_document(const BenchContext& ctx, const std::vector<Table>& tables,
                            const std::vector<std::string>& run_notes);
// Throws std::runtime_error when the file cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace vnet::bench
