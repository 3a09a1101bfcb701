// vnet-bench: one command per seed experiment (reference/kernel-datapath.md
// §5). Runs as root; every experiment makes and removes its own namespaces,
// taps, bridges and peer processes (names carry this run's PID), measures
// vnetd and its peers in the same run, and prints one table per experiment
// (Markdown), optionally JSON (--json) and PNG charts (--charts).
//
//   vnet-bench [--quick|--full] [--only seed004,...] [--json F] [--charts D]
//              [--repeat N] [--seconds S] [--build-dir DIR] [--verbose]
//   vnet-bench --list
//
// tools/bench/run is the one entry point over these experiments and the
// shell benches (lifecycle/, cni/, vxlan/, soak/), the callgrind script
// and the micro-benchmarks.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "experiments/experiments.hpp"
#include "harness/bench_context.hpp"
#include "harness/bench_log.hpp"
#include "harness/interrupt.hpp"
#include "report/chart_writer.hpp"
#include "report/json_writer.hpp"
#include "report/table_printer.hpp"

namespace {

using namespace vnet::bench;

std::vector<const Experiment*> selected(const BenchOptions& o) {
    std::vector<const Experiment*> out;
    for (const Experiment& e : experiments()) {
        bool wanted = o.only.empty();
        for (const std::string& id : o.only) {
            wanted |= id == e.id;
        }
        if (wanted) {
            out.push_back(&e);
        }
    }
    return out;
}

// A table whose experiment could not run at all (e.g. set-up failed).
Table failed_table(const Experiment& e, const std::string& why) {
    Table t;
    t.id = e.id;
    t.title = e.summary;
    t.unit = "";
    t.columns = {{"result", "result", ColumnKind::info, ""}};
    t.add_row("all", "experiment");
    t.cell("all", "result").set_not_available(why);
    t.notes.emplace_back("the experiment failed before its rows could be laid out");
    return t;
}

int run(int argc, char** argv) {
    BenchOptions options = parse_options(argc, argv);
    install_interrupt_handlers();
    BenchContext ctx(options, argv[0]);
    init_bench_log(ctx.log_dir() + "/commands.log", options.verbose);
    if (geteuid() != 0) {
        blog().error("vnet-bench needs root (network namespaces, taps, XDP, DPDK)");
        return 2;
    }
    if (auto missing = ctx.missing_tools(); !missing.empty()) {
        for (const std::string& m : missing) {
            blog().error("missing: {} (build with ninja -C {})", m, ctx.build_dir());
        }
        return 2;
    }
    std::vector<std::string> run_notes = {
        std::string("mode ") + (ctx.quick() ? "--quick" : "--full") + ": " +
            std::to_string(ctx.repeats()) + " repeat(s), " +
            std::to_string(ctx.point_seconds()).substr(0, 4) + " s points after " +
            std::to_string(ctx.warmup_seconds()).substr(0, 3) + " s warm-up",
        "pinning: " + ctx.pinning_text(),
        "cells: median (min-max) over the repeats; ratios are of medians measured in this run",
    };
    std::printf("vnet-bench: %s\n", run_notes[0].c_str());
    std::printf("vnet-bench: %s\n", run_notes[1].c_str());
    std::printf("vnet-bench: build %s, logs and every command in %s\n\n", ctx.build_dir().c_str(),
                ctx.log_dir().c_str());
    std::fflush(stdout);

    std::vector<Table> tables;
    int status = 0;
    try {
        for (const Experiment* e : selected(options)) {
            blog().info("== {}: {}", e->id, e->summary);
            try {
                tables.push_back(e->run(ctx));
            } catch (const Interrupted&) {
                throw;
            } catch (const std::exception& ex) {
                blog().error("{} failed: {}", e->id, ex.what());
                tables.push_back(failed_table(*e, ex.what()));
                status = 1;
            }
            std::printf("\n%s\n", format_table(tables.back()).c_str());
            std::fflush(stdout);
        }
    } catch (const Interrupted&) {
        blog().warn("interrupted: everything this run started has been stopped and removed");
        status = 130;
    }

    if (!options.json_path.empty()) {
        write_json_file(options.json_path, run_document(ctx, tables, run_notes));
        std::printf("vnet-bench: JSON in %s\n", options.json_path.c_str());
    }
    if (!options.charts_dir.empty()) {
        if (interrupted()) {
            std::printf("vnet-bench: no charts: interrupted\n");
        } else if (auto why = charts_unavailable()) {
            std::printf("vnet-bench: no charts: %s\n", why->c_str());
        } else {
            ChartOutcome charts = write_charts(tables, options.charts_dir);
            for (const std::string& png : charts.written) {
                std::printf("vnet-bench: chart %s\n", png.c_str());
            }
            for (const std::string& s : charts.skipped) {
                std::printf("vnet-bench: no chart for %s\n", s.c_str());
            }
        }
    }
    std::printf("vnet-bench: logs in %s\n", ctx.log_dir().c_str());
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vnet-bench: %s\n", e.what());
        return 1;
    }
}
