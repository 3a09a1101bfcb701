#include "command_line.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "experiments/experiments.hpp"

namespace vnet::bench {

BenchOptions parse_options(int argc, char** argv) {
    BenchOptions o;
    CLI::App app{
        "vnet-bench: runs the seed experiments of reference/kernel-datapath.md against vnetd "
        "and its peers (DPDK testpmd, a naive forwarder, the kernel), in one run, as root.\n"
        "Each experiment makes and removes its own namespaces, taps and processes; vnetd or "
        "the forwarder under test runs on one CPU, the traffic source/sink on the other."};
    bool quick = false, full = false, list = false;
    std::string only;
    auto* q = app.add_flag("--quick", quick,
                           "about a minute: 1 repeat, ~1 s points, a subset of rows (default)");
    auto* f = app.add_flag("--full", full, "all rows, 3 repeats, 5 s points");
    q->excludes(f);
    std::string ids;
    for (const Experiment& e : experiments()) {
        ids += (ids.empty() ? "" : ",") + std::string(e.id);
    }
    app.add_option("--only", only, "comma-separated experiments (" + ids + ")");
    app.add_option("--json", o.json_path, "write every table as JSON to this file");
    app.add_option("--charts", o.charts_dir, "write one PNG chart per table here (gnuplot)");
    app.add_option("--repeat", o.repeat, "repeats of every point (min/median/max)")
        ->check(CLI::Range(1, 50));
    app.add_option("--seconds", o.seconds, "length of one measured point")
        ->check(CLI::Range(0.2, 600.0));
    app.add_option("--build-dir", o.build_dir,
                   "build directory with apps/vnetd, apps/vnet-pktgen, tools/bench/, bpf/ "
                   "(default: <build> of <build>/tools/bench/vnet-bench)");
    app.add_option("--log-dir", o.log_dir,
                   "where the command log and every process's output go (default "
                   "/tmp/vnet-bench-<pid>; kept after the run)");
    app.add_option("--dut-cpu", o.dut_cpu, "CPU of vnetd / the forwarder (default: the last)");
    app.add_option("--load-cpu", o.load_cpu, "CPU of the traffic source/sink (default: 0)");
    app.add_flag("-v,--verbose", o.verbose, "print every command as it runs");
    app.add_flag("--list", list,
                 "print each experiment's id and what it measures, one a line, and exit "
                 "(tools/bench/run --list adds the shell benches)");
    try {
        app.parse(argc, argv);
        if (list) {
            for (const Experiment& e : experiments()) {
                std::printf("%-12s %s\n", e.id, e.summary);
            }
            std::exit(0);
        }
        o.mode = full ? RunMode::full : RunMode::quick;
        std::stringstream ss(only);
        std::string id;
        while (std::getline(ss, id, ',')) {
            if (id.empty()) {
                continue;
            }
            if (!find_experiment(id)) {
                throw CLI::ValidationError("--only: unknown experiment '" + id + "' (" + ids + ")");
            }
            o.only.push_back(id);
        }
    } catch (const CLI::ParseError& e) {
        std::exit(app.exit(e));
    }
    return o;
}

}  // namespace vnet::bench
