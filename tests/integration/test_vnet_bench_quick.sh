#!/bin/bash
# vnet-bench --quick end to end: every table (the seeds, ringwork...) must
# come out, in the JSON with all its rows and, in every cell, a number or an
# "n/a" reason; with gnuplot installed, one PNG per table. No timing
# assertions: the numbers are whatever this machine gives (timing lives in
# benchmarks, not tests).
# Afterwards nothing of the run may be left: no namespace or link with its
# run id.
#
# Usage: test_vnet_bench_quick.sh BUILD_DIR   (as root; exit 77 = skipped)
set -u


HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
BENCH="$BUILD_DIR/tools/bench/vnet-bench"
[ "$(id -u)" = 0 ] || skip "needs root (netns, taps, XDP, DPDK)"
need_commands ip python3
need_built "$BENCH"

work_dir vnet-bench-test
fail_log "$WORK/bench.out" 60
fail_log "$WORK/logs/commands.log" 30

# At exit (if it still runs): SIGINT, and time to stop what it started.
bg_start --log "$WORK/bench.out" --stop INT --grace 60 \
    "$BENCH" --quick --json "$WORK/bench.json" --charts "$WORK/charts" --log-dir "$WORK/logs"
BENCH_PID=$BG_PID
wait "$BENCH_PID"
RC=$?
forget "$BENCH_PID"
[ "$RC" = 0 ] || fail "vnet-bench exited with $RC"
[ -s "$WORK/bench.json" ] || fail "no JSON written"

GNUPLOT=0
command -v gnuplot >/dev/null && GNUPLOT=1

python3 - "$WORK/bench.json" "$WORK/charts" "$GNUPLOT" <<'PYEOF' || fail "JSON/charts check"
import json, math, os, sys

path, charts, gnuplot = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
doc = json.load(open(path))
expected = {
    "seed004": ["b0", "b4", "b8", "b16", "b32", "b48", "b64", "b64-nopeek", "dpdk"],
    "seed003": ["plain", "drop", "redirect"],
    "seed002": ["gro0-napi0", "gro1-napi0", "gro0-napi1", "gro1-napi1", "gro0-notso",
                "gro1-notso", "kernel", "naive", "testpmd"],
    "seed000": ["l64-p1", "l128-p1", "l4k-p1", "l64-p4", "l128-p4", "l4k-p4"],
    "rawlimit": ["raw", "raw-xdp", "raw-uring", "raw-napi", "vnetd", "vnetd-xdp"],
    "guestrx": ["64-split", "1500-split", "64-packed", "1500-packed"],
    "multiqueue": ["q1-w1", "q2-w1", "q4-w1", "q2-w2", "q4-w2"],
    "ringwork": ["64-split", "64-packed", "1500-split", "1500-packed"],
    "vmswitch": ["idle-64", "idle-1500", "idle-64-q1024", "normal-64", "normal-1500", "beside-64",
                 "beside-1500"],
    "switchhol": ["healthy", "stalled", "stalled_vs_healthy"],
    "switchgso": ["whole", "whole-beside", "segmented"],
    "switchscale": ["ports-2", "ports-4", "ports-8", "ports-16", "macs-100", "macs-1000",
                    "macs-10000"],
    "switchidle": ["silent", "after"],
    "portadd": ["vnetd", "ovs"],
    "latency": ["tap-bridge", "tap-vnetd", "tap-vnetd-poll", "tap-testpmd", "vm-vnetd",
                "vm-vnetd-poll", "vm-testpmd"],
}
# The switch tables' --quick points are vnetd's alone (no OVS-DPDK needed):
# each must have measured something, or its harness is broken.
must_measure = {"vmswitch", "switchhol", "switchgso", "switchscale", "switchidle", "portadd",
                "latency"}
errors = []
tables = {t["id"]: t for t in doc.get("tables", [])}
for tid, rows in expected.items():
    t = tables.get(tid)
    if t is None:
        errors.append(f"{tid}: table missing")
        continue
    columns = [c["key"] for c in t["columns"]]
    got = [r["key"] for r in t["rows"]]
    if got != rows:
        errors.append(f"{tid}: rows {got}, expected {rows}")
    measured = 0
    for r in t["rows"]:
        for c in columns:
            cell = r["cells"].get(c)
            if cell is None:
                errors.append(f"{tid}/{r['key']}/{c}: cell missing")
            elif "na" in cell:
                if not isinstance(cell["na"], str) or not cell["na"].strip():
                    errors.append(f"{tid}/{r['key']}/{c}: n/a without a reason")
            else:
                v = cell.get("median", cell.get("value"))
                if not isinstance(v, (int, float)) or not math.isfinite(v):
                    errors.append(f"{tid}/{r['key']}/{c}: not a number: {cell}")
                elif "median" in cell:
                    measured += 1
    print(f"{tid}: {len(t['rows'])} rows, {len(columns)} columns, {measured} measured cells")
    if tid in must_measure and measured == 0:
        errors.append(f"{tid}: no cell measured")
    if gnuplot:
        png = os.path.join(charts, tid + ".png")
        if not os.path.isfile(png) or os.path.getsize(png) == 0:
            errors.append(f"{tid}: chart {png} missing")
if not gnuplot:
    print("gnuplot not installed: charts not checked")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
PYEOF

RUN_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$WORK/bench.json")
[ -n "$RUN_ID" ] || fail "no run_id in the JSON"
if ip netns list | grep -q -- "vnb-$RUN_ID-"; then
    fail "namespaces of run $RUN_ID left behind: $(ip netns list | grep -- "vnb-$RUN_ID-" | tr '\n' ' ')"
fi
if ip -o link show | grep -q "vb$RUN_ID"; then
    fail "links of run $RUN_ID left behind"
fi
pass
