#include "report/json_writer.hpp"

#include <sys/utsname.h>

#include <ctime>
#include <fstream>
#include <stdexcept>

namespace vnet::bench {

nlohmann::json run_document(const BenchContext& ctx, const std::vector<Table>& tables,
                            const std::vector<std::string>& run_notes) {
    nlohmann::json doc;
    doc["tool"] = "vnet-bench";
    doc["mode"] = ctx.quick() ? "quick" : "full";
    doc["run_id"] = ctx.run_id();  // in every netns and link name of the run
    char when[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    doc["finished_utc"] = when;
    utsname u{};
    uname(&u);
    doc["kernel"] = u.release;
    doc["repeats"] = ctx.repeats();
    doc["point_seconds"] = ctx.point_seconds();
    doc["warmup_seconds"] = ctx.warmup_seconds();
    doc["pinning"] = {
        {"dut_cpu", ctx.dut_cpu()}, {"load_cpu", ctx.load_cpu()}, {"text", ctx.pinning_text()}};
    doc["build_dir"] = ctx.build_dir();
    doc["log_dir"] = ctx.log_dir();
    doc["vnetd_flags"] = ctx.vnetd_flags().all();
    doc["notes"] = run_notes;
    doc["tables"] = nlohmann::json::array();
    for (const Table& t : tables) {
        doc["tables"].push_back(t.to_json());
    }
    return doc;
}

void write_json_file(const std::string& path, const nlohmann::json& doc) {
    std::ofstream out(path);
    if (!out) {
        throw std::runtime_error("cannot write " + path);
    }
    out << doc.dump(2) << "\n";
}

}  // namespace vnet::bench
