# shellcheck shell=bash
# The shell benches' common set-up (lifecycle/, cni/, vxlan/, soak/): what
# each of them did alike before its own measurement. Source it after
# `set -u`, then call bench_init:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#   bench_init vnet-foo "$@"        # BUILD_DIR OUT_DIR, as root
#
# It sources tests/integration/lib/common.sh (the cleanup stack, bg_start,
# wait_for, netns_new, fail, ...), so everything a bench starts is stopped
# and removed at exit, by PID, as in the integration tests.
#
#   bench_init NAME BUILD_DIR OUT_DIR   root check; BUILD_DIR and OUT_DIR
#                       made absolute (OUT_DIR created); the build's
#                       programs (build_programs; vnetd and vnetctl
#                       checked); BENCH_TI: the integration tests' folder;
#                       OUT_DIR/run.json started
#   bench_need_command CMD HINT   fail unless CMD is on the PATH
#   bench_work          WORK, a temp dir removed at exit (work_dir NAME);
#                       CTL=$WORK/vnetd.ctl, the control socket of
#   bench_vnetd LOG [TOML_EXTRA]   vnetd with only that control socket and
#                       TOML_EXTRA in its config; VNETD_PID; waits for the
#                       socket
#   bench_done FILE...  the run's summaries (paths in OUT_DIR), recorded in
#                       OUT_DIR/run.json with the end time
#
# and from tests/integration/lib/common.sh: build_programs (VNETD,
# VNETCTL, PKTGEN, CNI), need_built FILE..., start_vnetd, wait_control,
# ctl ARGS... (vnetctl on that vnetd).
#
# OUT_DIR/run.json says what ran: the bench, the command line, the commit
# of this tree (the scripts; the binaries are BUILD_DIR's), the build
# directory, the start and end (UTC), the load average at the start, the
# BENCH_*/ATTACH_*/SOAK_* settings, and which files hold the summaries.
# BENCH_CHILD=1 (a lifecycle child run, a table rebuild) leaves it alone.

BENCH_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_TI=$(cd "$BENCH_LIB_DIR/../../tests/integration" && pwd)
# shellcheck source=../../tests/integration/lib/common.sh
. "$BENCH_TI/lib/common.sh"

# bench_init NAME BUILD_DIR OUT_DIR: see the header.
bench_init() {
    BENCH_NAME=$1
    shift
    [ $# -ge 2 ] || fail "usage: $0 BUILD_DIR OUT_DIR"
    [ "$(id -u)" = 0 ] || fail "needs root"
    BUILD_DIR=$(cd "$1" && pwd) || fail "no build directory $1"
    OUT=$2
    mkdir -p "$OUT" || fail "cannot make $OUT"
    OUT=$(cd "$OUT" && pwd)
    build_programs "$BUILD_DIR"
    need_built "$VNETD" "$VNETCTL"
    # The parent run's command line, not a child run's (lifecycle's --one).
    [ -n "${BENCH_COMMAND:-}" ] || export BENCH_COMMAND="$0 $*"
    [ -n "${BENCH_CHILD:-}" ] || _bench_run_json start
}

# bench_need_command CMD HINT: see the header.
bench_need_command() {
    command -v "$1" >/dev/null || fail "$1 not found ($2)"
}

bench_work() {
    work_dir "$BENCH_NAME"
    CTL="$WORK/vnetd.ctl"
}

# bench_vnetd LOG [TOML_EXTRA]: see the header.
bench_vnetd() {
    printf '[daemon]\ncontrol_socket = "%s"\n%s' "$CTL" "${2:-}" >"$WORK/vnetd.toml"
    start_vnetd "$1" --config "$WORK/vnetd.toml"
    wait_control
}

# bench_done FILE...: see the header.
bench_done() { _bench_run_json finish "$@"; }

# _bench_run_json start|finish [FILE...]: write or complete OUT_DIR/run.json.
_bench_run_json() {
    local phase=$1
    shift
    python3 - "$OUT/run.json" "$phase" "$BENCH_NAME" "$BENCH_COMMAND" \
        "$(git -C "$BENCH_LIB_DIR" rev-parse --short HEAD 2>/dev/null)" \
        "$(cut -d ' ' -f 1-3 /proc/loadavg)" "$BUILD_DIR" "$@" <<'PY' || fail "cannot write $OUT/run.json"
import json, os, sys, time
path, phase, name, command, commit, load, build_dir = sys.argv[1:8]
now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
if phase == "start":
    doc = {"bench": name, "command": command, "commit": commit or None,
           "build_dir": build_dir, "started_utc": now, "load_average_at_start": load,
           "settings": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(("BENCH_", "ATTACH_", "SOAK_"))
                        and k not in ("BENCH_COMMAND", "BENCH_INITRD", "BENCH_CHILD")}}
else:
    doc = json.load(open(path))
    doc["finished_utc"] = now
    doc["summaries"] = [os.path.relpath(f, os.path.dirname(path)) for f in sys.argv[8:]]
with open(path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY
}
