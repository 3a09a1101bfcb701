# shellcheck shell=bash
# The one shell library of the integration tests (and scripts/demo.sh).
# Source it first thing after `set -u` (or -euo pipefail):
#
#   HERE=$(cd "$(dirname "$0")" && pwd)
#   # shellcheck source=lib/common.sh
#   source "$HERE/lib/common.sh"
#   build_programs "${1:-}"     # BUILD_DIR (the argument), VNETD, VNETCTL, ...
#   need_built "$VNETD" ...     # or fail
#   work_dir vnetd-foo          # WORK=/tmp/vnetd-foo.XXXXXX, removed at exit
#
# Every test opens so (with its own settings around it), and every vnetd
# it starts gets a control socket of its own under WORK (start_vnetd), so
# that tests can run side by side.
#
# Sourcing it installs the EXIT trap (and INT/TERM/HUP/PIPE traps that exit
# 128+n, so the EXIT trap runs then too). Do not install traps of your own:
# register undo actions with on_exit instead.
#
# What it offers (each function has its own comment below):
#   cleanup stack   on_exit CMD...          run in reverse order at exit
#                   track PID [SIG] [SECS]  a process to stop at exit
#                   forget PID              it was waited for: not ours now
#                   work_dir NAME           WORK, a temp dir removed at exit
#                                           (kept with VNET_KEEP_WORK=1)
#   processes       bg_start [opts] CMD...  background, logs captured, tracked;
#                                           BG_PID is its pid
#                   stop_pid PID [SIG] [SECS]  SIG (TERM), bounded wait,
#                                           SIGKILL fallback; returns the
#                                           exit status
#                   running PID / exited PID
#   waiting         wait_until SECS CMD...  0 when CMD succeeded in time
#                   wait_for SECS MSG CMD...   the same, or fail MSG
#                   log_has FILE ERE, log_count FILE ERE N  (conditions)
#   reporting       fail MSG (FAIL: line, logs, exit 1), pass [MSG]
#                   (PASS: line, exit 0), skip MSG (SKIP: line, exit 77),
#                   ok MSG (an "ok:" progress line), fail_log FILE [LINES]
#                   check DESCRIPTION CMD... and checks_passed (checks
#                   that let the test go on), check_equal, check_zero,
#                   check_vnetd_bytes
#   names           VT_ID (= the test's pid), ns_name PREFIX [SUFFIX],
#                   link_name PREFIX [SUFFIX] (fails above 15 characters)
#   netns, links    netns_new NAME [--ipv6], netns_del NAME,
#                   link_stat NS DEV FIELD, fd_count PID,
#                   settled_fd_count PID, fd_targets PID
#   programs        build_programs BUILD_DIR (VNETD, VNETCTL, PKTGEN, CNI),
#                   need_commands CMD... (or skip), need_built FILE...
#   vnetd, pktgen   start_vnetd LOG [--netns NS] ARG... (VNETD_PID),
#                   ctl ARG... (vnetctl on CTL), wait_control [SECS],
#                   vnetd_stats FILE PORT.DIR.FIELD..., pktgen_value FILE KEY
#   DPDK            NCPU, LAST_CPU, dpdk_eal NAME LCORES (sets EAL_ARGS)
#   QEMU guests     guest_kernel (sets KERNEL, KVER), qemu_guest_prerequisites,
#                   guest_initramfs, guest_command [opts] (sets GUEST_CMD)
#
# Processes: every process is stopped by its PID only, and only those this
# test started and registered (bg_start, track). Nothing is killed by name.
#
# What stays in each script on purpose, though it looks alike between them
# (`duplicates` pairs them by shape): a test's vnetd.toml heredoc (the
# topology is the test's input and reads as the operator's file would; a
# writer function would hide the keys under test), its prelude of bounds
# and sizes (the same names, each test's own values and reasons), and its
# assertion blocks over its own streams and counters. Set-up that is the
# same in effect (processes, names, namespaces, guests, streams) lives here
# and in lib/qemu_stream.sh, lib/vxlan_hosts.sh.

[ -n "${_VT_COMMON_LOADED:-}" ] && return 0
_VT_COMMON_LOADED=1
_VT_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

VT_ID=$$

# ---- the cleanup stack ---------------------------------------------------------

_VT_STACK=()           # undo actions, each one shell-quoted command line
declare -A _VT_PIDS=() # tracked pid -> "SIGNAL SECONDS" (how to stop it at exit)
_VT_CLEANING=""
declare -A _VT_OWNER=() # tracked pid -> pid of the shell that started it
_VT_FAIL_LOGS=()       # "LINES FILE" entries for fail (fail_log)

# on_exit CMD [ARG...]: run CMD ARG... at exit (after everything registered
# later). Its stderr goes to /dev/null and its status is ignored.
on_exit() {
    _VT_STACK+=("$(printf '%q ' "$@")")
}

# track PID [SIGNAL] [SECONDS]: a process this test started; at exit it gets
# SIGNAL (default TERM) and SECONDS (default 5) to go before SIGKILL.
track() {
    _VT_PIDS[$1]="${2:-TERM} ${3:-5}"
    _VT_OWNER[$1]=$BASHPID
    on_exit _vt_reap "$1"
}

# _vt_ours PID: PID runs (is not a zombie) and is still a child of the
# shell that started it (not a process that took over the number of one
# that exited and was reaped).
_vt_ours() {
    local stat state ppid
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    read -r state ppid _ <<<"${stat##*) }"
    [ "$state" != Z ] && [ "$ppid" = "${_VT_OWNER[$1]:-$BASHPID}" ]
}

# forget PID: it has exited and was waited for; not ours to signal any more.
forget() {
    unset "_VT_PIDS[$1]" "_VT_OWNER[$1]"
}

# _vt_reap PID: (at exit) wait for a process that was sent its signal, until
# its deadline; then SIGKILL it. Only tracked pids (not forgotten ones).
_vt_reap() {
    local pid=$1
    [ -n "${_VT_PIDS[$pid]:-}" ] || return 0
    local secs=${_VT_PIDS[$pid]#* }
    local end=$((_VT_CLEANUP_T0 + secs * 1000000))
    while _vt_ours "$pid" && [ "$(_vt_now_us)" -lt "$end" ]; do
        sleep 0.1
    done
    _vt_ours "$pid" && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    forget "$pid"
}

# Microseconds since the epoch (EPOCHREALTIME without its decimal point).
_vt_now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }

# The EXIT trap: signals every tracked process at once, then runs the stack
# in reverse. Runs once (a second signal or exit inside it does nothing),
# never fails and keeps the script's exit status.
_vt_cleanup() {
    local rc=$?
    [ -n "$_VT_CLEANING" ] && return "$rc"
    _VT_CLEANING=1
    set +e +u
    set +o pipefail
    trap '' INT TERM HUP PIPE
    local pid sig
    for pid in "${!_VT_PIDS[@]}"; do
        sig=${_VT_PIDS[$pid]%% *}
        _vt_ours "$pid" && kill -"$sig" "$pid" 2>/dev/null
    done
    _VT_CLEANUP_T0=$(_vt_now_us)
    local i
    for ((i = ${#_VT_STACK[@]} - 1; i >= 0; i--)); do
        eval "${_VT_STACK[i]}" 2>/dev/null
    done
    _VT_STACK=()
    return "$rc"
}
trap _vt_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 141' PIPE
trap 'exit 143' TERM

# work_dir NAME: WORK becomes a new directory /tmp/NAME.XXXXXX, removed at
# exit unless VNET_KEEP_WORK=1 (or KEEP_WORK=1) says to keep it.
work_dir() {
    WORK=$(mktemp -d "/tmp/$1.XXXXXX") || fail "mktemp -d /tmp/$1.XXXXXX"
    on_exit _vt_remove_work "$WORK"
}
_vt_remove_work() {
    if [ "${VNET_KEEP_WORK:-${KEEP_WORK:-0}}" != 0 ]; then
        echo "work directory kept: $1"
    else
        rm -rf "$1"
    fi
}

# ---- processes -------------------------------------------------------------------

# bg_start [--out FILE] [--err FILE] [--log FILE] [--in FILE] [--stop SIG]
#          [--grace SECS] [--] CMD [ARG...]
# Starts CMD (a program, not a shell function) in the background, tracked
# (see track; --stop and --grace are its SIGNAL and SECONDS at exit).
# --out/--err redirect stdout/stderr, --log both to one file, --in stdin;
# what is not redirected is inherited (stdin is /dev/null, as for any
# background job of a script). BG_PID is CMD's own pid (the subshell execs
# it; wrappers that exec, like taskset, ip netns exec and stdbuf, keep
# it), so signals reach the program. Do not call it in $(...).
bg_start() {
    local out="" err="" in=/dev/null sig=TERM grace=5
    while [ $# -gt 0 ]; do
        case $1 in
            --out) out=$2; shift 2 ;;
            --err) err=$2; shift 2 ;;
            --log) out=$2; err=$2; shift 2 ;;
            --in) in=$2; shift 2 ;;
            --stop) sig=$2; shift 2 ;;
            --grace) grace=$2; shift 2 ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    (
        exec <"$in"
        if [ -n "$out" ]; then exec >"$out"; fi
        if [ -n "$err" ] && [ "$err" = "$out" ]; then
            exec 2>&1
        elif [ -n "$err" ]; then
            exec 2>"$err"
        fi
        exec "$@"
    ) &
    BG_PID=$!
    track "$BG_PID" "$sig" "$grace"
}

# running PID: the process (a child of this shell) still runs.
# exited PID: it does not any more.
running() { _vt_ours "$1"; }
exited() { ! _vt_ours "$1"; }

# stop_pid PID [SIGNAL] [SECONDS]: send SIGNAL (default TERM), wait up to
# SECONDS (default 20) for the exit, SIGKILL it if it is still there, reap
# it and forget it. Returns its exit status (128+n for a signal n: 137 when
# it had to be killed), so `stop_pid "$PID" || fail "exit status $?"`
# asserts a clean exit. A process that already exited is just reaped.
# Must run in this shell (not in $(...)): only the parent can reap.
# stderr is closed around the reaping: bash reports a child killed by a
# signal ("Killed") on stderr, and a test that kills on purpose should
# not print that.
stop_pid() {
    local pid=$1 sig=${2:-TERM} secs=${3:-20} rc=0 end
    end=$(($(_vt_now_us) + secs * 1000000))
    {
        if _vt_ours "$pid"; then kill -"$sig" "$pid" || true; fi
        while _vt_ours "$pid" && [ "$(_vt_now_us)" -lt "$end" ]; do
            sleep 0.1
        done
    } 2>/dev/null
    if _vt_ours "$pid"; then
        echo "stop_pid: pid $pid still running $secs s after SIG$sig; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    { wait "$pid" || rc=$?; } 2>/dev/null
    forget "$pid"
    return "$rc"
}

# ---- waiting ---------------------------------------------------------------------

# wait_until SECONDS CMD [ARG...]: run CMD (stderr discarded) every 0.1 s
# until it succeeds (return 0) or SECONDS (an integer) of wall-clock time
# have passed; CMD gets one last try at the deadline (return 1 if it fails).
wait_until() {
    local end=$(($(_vt_now_us) + $1 * 1000000))
    shift
    while true; do
        "$@" 2>/dev/null && return 0
        [ "$(_vt_now_us)" -lt "$end" ] || break
        sleep 0.1
    done
    "$@" 2>/dev/null
}

# wait_for SECONDS MESSAGE CMD [ARG...]: wait_until, or fail MESSAGE.
wait_for() {
    local secs=$1 msg=$2
    shift 2
    wait_until "$secs" "$@" || fail "$msg (waited ${secs} s for: $*)"
}

# log_has FILE ERE: a line of FILE matches ERE.
log_has() { grep -qE -- "$2" "$1" 2>/dev/null; }
# log_has_text FILE TEXT: a line of FILE holds TEXT as it is (no regex:
# for log lines with parentheses, dots, brackets).
log_has_text() { grep -qF -- "$2" "$1" 2>/dev/null; }

# log_count FILE ERE N: at least N lines of FILE match ERE.
log_count() { [ "$(grep -cE -- "$2" "$1" 2>/dev/null)" -ge "$3" ]; }

# ---- reporting -------------------------------------------------------------------

# fail_log FILE [LINES]: on failure, print the last LINES (default 30) of
# FILE. Without any fail_log, fail prints the last VT_FAIL_LINES (30) lines
# of every non-empty *.log, *.err and *.out file in WORK.
fail_log() {
    _VT_FAIL_LOGS+=("${2:-30} $1")
}

# fail MESSAGE: print "FAIL: MESSAGE" and the logs (see fail_log), exit 1.
# In a subshell ($(...), < <(...), a pipeline) it prints the FAIL line to
# stderr (not into the capture) and ends the test too: SIGTERM to the
# test's shell, which exits 143 through the EXIT trap.
fail() {
    if [ "$BASH_SUBSHELL" -gt 0 ]; then
        echo "FAIL: $*" >&2
        kill -TERM "$VT_ID"
        exit 1
    fi
    echo "FAIL: $*"
    local entry f n
    local entries=("${_VT_FAIL_LOGS[@]}")
    if [ ${#entries[@]} = 0 ] && [ -n "${WORK:-}" ]; then
        for f in "$WORK"/*.log "$WORK"/*.err "$WORK"/*.out; do
            entries+=("${VT_FAIL_LINES:-30} $f")
        done
    fi
    for entry in "${entries[@]}"; do
        n=${entry%% *}
        f=${entry#* }
        [ -s "$f" ] || continue
        echo "----- $(basename "$f") (last $n lines)"
        tail -n "$n" "$f"
    done
    exit 1
}

# pass [MESSAGE]: print "PASS: MESSAGE" (default: the script's name), exit 0.
pass() {
    echo "PASS: ${*:-$(basename "$0")}"
    exit 0
}

# skip MESSAGE: print "SKIP: MESSAGE", exit 77.
skip() {
    echo "SKIP: $*"
    exit 77
}

# ok MESSAGE: one check passed (a progress line, the test goes on).
ok() { echo "ok: $*"; }

# check DESCRIPTION CMD...: a check that lets the test go on: when CMD
# fails, DESCRIPTION joins FAILS; checks_passed, at the end, fails the test
# if any did (a test that reports every broken check of a long run at once).
FAILS=()
check() {
    local what=$1
    shift
    "$@" || FAILS+=("$what")
}

# checks_passed: fail ("N check(s) failed"), listing each, if a check did.
checks_passed() {
    if ((${#FAILS[@]})); then
        printf '  failed: %s\n' "${FAILS[@]}"
        fail "${#FAILS[@]} check(s) failed"
    fi
}

# check_equal CASE NAME=VALUE...: every value must equal the first.
check_equal() {
    local label=$1 first="" pair value
    shift
    echo "($label) $*"
    for pair in "$@"; do
        value=${pair#*=}
        [ -n "$value" ] || fail "($label) ${pair%%=*} is missing"
        [ -n "$first" ] || first=$value
        [ "$value" = "$first" ] || fail "($label) ${pair%%=*} = $value, expected $first"
    done
}

# expect_vnetd_log CASE LOG: with VNET_TEST_EXPECT_LOG set (an ERE), LOG
# must match it (a wrapper running a test in another mode checks that the
# mode was really negotiated, e.g. test_testpmd_packed.sh).
expect_vnetd_log() {
    [ -n "${VNET_TEST_EXPECT_LOG:-}" ] || return 0
    grep -qE -- "$VNET_TEST_EXPECT_LOG" "$2" ||
        fail "($1) vnetd's log has no line matching '$VNET_TEST_EXPECT_LOG'"
    echo "($1) vnetd log: $(grep -m1 -oE -- "$VNET_TEST_EXPECT_LOG" "$2")"
}

# check_zero CASE NAME=VALUE...: every value must be 0.
check_zero() {
    local label=$1 pair value
    shift
    for pair in "$@"; do
        value=${pair#*=}
        [ "$value" = 0 ] || fail "($label) ${pair%%=*} = ${value:-missing}, expected 0"
    done
}

# check_vnetd_bytes CASE NAME VNETD_BYTES FRAME_BYTES PACKETS: vnetd's byte
# counters count each packet's 12-byte virtio-net header along with the
# frame (tap_port.cpp, vhost_user_port.cpp); the kernel and vnet-pktgen
# count frame bytes only. Either convention passes, nothing in between.
check_vnetd_bytes() {
    local label=$1 name=$2 got=$3 frame=$4 packets=$5
    if [ "$got" = "$frame" ]; then
        return 0
    fi
    [ "$got" = $((frame + 12 * packets)) ] ||
        fail "($label) vnetd $name bytes = $got: neither the frame bytes $frame" \
            "nor frames + 12-byte virtio-net headers $((frame + 12 * packets))"
}

# ---- names -----------------------------------------------------------------------

# ns_name PREFIX [SUFFIX]: PREFIX-<pid>[-SUFFIX], a netns name of this run.
ns_name() { echo "$1-$VT_ID${2:+-$2}"; }

# link_name PREFIX [SUFFIX]: PREFIX<pid>SUFFIX, a link name of this run;
# fails the test when it is longer than IFNAMSIZ - 1 = 15 characters (pids
# have up to 7 digits, so PREFIX + SUFFIX should stay within 8).
link_name() {
    local name="$1$VT_ID${2:-}"
    [ ${#name} -le 15 ] || fail "link name $name is longer than 15 characters"
    echo "$name"
}

# ---- network namespaces and links ------------------------------------------------

# netns_new NAME [--ipv6]: a namespace, deleted at exit. Without --ipv6 its
# IPv6 is off, so the stack sends nothing of its own (no MLD report, DAD
# probe or router solicitation) through a tap that lives there: every frame
# a tap counts is then the test's. With --ipv6: IPv6 on, without DAD, and
# lo up.
netns_new() {
    ip netns add "$1" || fail "ip netns add $1"
    on_exit ip netns del "$1"
    if [ "${2:-}" = --ipv6 ]; then
        ip netns exec "$1" sysctl -qw net.ipv6.conf.all.accept_dad=0 \
            net.ipv6.conf.default.accept_dad=0 || fail "sysctl in $1"
        ip -n "$1" link set lo up || fail "lo up in $1"
    else
        ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
            net.ipv6.conf.default.disable_ipv6=1 || fail "sysctl in $1"
    fi
}

# netns_del NAME: delete it now (the exit's delete then finds nothing).
netns_del() {
    ip netns del "$1" || fail "ip netns del $1"
}

# link_stat NS DEV FIELD: the kernel counter FIELD (rx_packets, tx_dropped,
# ...) of DEV, /sys/class/net/DEV/statistics/FIELD, read in NS ("" = this
# namespace). Prints nothing and returns 1 when there is no such counter.
link_stat() {
    if [ -n "$1" ]; then
        ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3" 2>/dev/null
    else
        cat "/sys/class/net/$2/statistics/$3" 2>/dev/null
    fi
}

# fd_count PID: open file descriptors of PID (0 when it is gone).
fd_count() {
    { ls -U "/proc/$1/fd" 2>/dev/null || true; } | wc -l
}

# settled_fd_count PID: fd_count once it has held still for half a second
# (at most 5 s), for a baseline taken just after ports came and went: a
# single sample there once read one less than every later one agreed on.
settled_fd_count() {
    local last now same=0 end=$(($(_vt_now_us) + 5000000))
    last=$(fd_count "$1")
    while [ "$same" -lt 5 ] && [ "$(_vt_now_us)" -lt "$end" ]; do
        sleep 0.1
        now=$(fd_count "$1")
        if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0 last=$now; fi
    done
    echo "$last"
}

# fd_targets PID: what each open descriptor of PID points at, one per line
# ("N -> target", sorted), so a test whose fd count moved can say which one.
fd_targets() {
    local fd
    for fd in "/proc/$1/fd/"*; do
        [ -e "$fd" ] || [ -L "$fd" ] || continue
        echo "${fd##*/} -> $(readlink "$fd" 2>/dev/null)"
    done | sort -n
}

# ---- vnetd and vnet-pktgen -------------------------------------------------------

# need_commands COMMAND...: every COMMAND is on the PATH, or the test is
# skipped ("COMMAND not found").
need_commands() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null || skip "$c not found"
    done
}

# build_programs BUILD_DIR: the build under test (the test's argument; the
# usage line and exit without it): BUILD_DIR, and its programs VNETD,
# VNETCTL, PKTGEN (vnet-pktgen) and CNI (vnetd-cni), checked by need_built
# where a test uses them.
# shellcheck disable=SC2034 # for the scripts
build_programs() {
    BUILD_DIR=${1:?usage: $0 BUILD_DIR}
    VNETD="$BUILD_DIR/apps/vnetd"
    VNETCTL="$BUILD_DIR/apps/vnetctl"
    PKTGEN="$BUILD_DIR/apps/vnet-pktgen"
    CNI="$BUILD_DIR/apps/vnetd-cni"
}

# need_built FILE...: every FILE is there and executable (a program of the
# build under test), or the test fails "FILE not built".
need_built() {
    local f
    for f in "$@"; do
        [ -x "$f" ] || fail "$f not built"
    done
}

# start_vnetd LOG [--netns NS] [--] ARG...: vnetd (VNETD) with ARG... in the
# background, in network namespace NS when given, its stdout and stderr in
# LOG, tracked (SIGTERM at exit); VNETD_PID is its pid. ARG... should give
# it a control socket of this test's own, --control-socket "$CTL" or
# control_socket in its --config (or --control-socket "" for none): the
# default, /run/vnetd/vnetd.ctl, is the host's, and two tests run at once
# would share it.
start_vnetd() {
    local log=$1 ns=()
    shift
    if [ "${1:-}" = --netns ]; then
        ns=(ip netns exec "$2")
        shift 2
    fi
    [ "${1:-}" = -- ] && shift
    bg_start --log "$log" "${ns[@]}" "$VNETD" "$@"
    VNETD_PID=$BG_PID
}

# ctl ARG...: vnetctl (VNETCTL) against this test's vnetd, at its control
# socket CTL.
ctl() { "$VNETCTL" --socket "$CTL" "$@"; }

# wait_control [SECONDS]: wait (default 10 s) until vnetd has made its
# control socket CTL, or fail "vnetd did not open its control socket".
# shellcheck disable=SC2120 # SECONDS is optional
wait_control() {
    wait_for "${1:-10}" "vnetd did not open its control socket" test -S "$CTL"
}

# vnetd_stats FILE PORT.DIR.FIELD[.QUEUE]...: the values, space-separated,
# from a vnetd stats JSON (queue QUEUE, default 0; FIELD "drops" is the sum
# of every reason, "gro_frames"/"gro_segments" the user-space GRO counters).
vnetd_stats() {
    # jq, not python3: a python3 start costs 0.3 s on a PVM guest (jq 0.02),
    # and the tests read stats hundreds of times; with jq the release
    # integration pass took 940 s instead of 1,137.
    local path=$1
    shift
    jq -r '(.ports | map({(.name): .}) | add) as $ports
        | [$ARGS.positional[] | split(".") as [$port, $dir, $field, $queue]
           | ($ports[$port] // error("no port \($port) in \(input_filename)"))
           | (.queues[$queue // "0" | tonumber] // error("no queue \($queue) of \($port)"))[$dir] as $q
           | if $field == "drops" then $q.drops | add
             elif ($field | startswith("gro_")) then $q.gro[$field[4:]]
             else $q[$field] // error("no field \($field) in \($port).\($dir)") end
           | tostring]
        | join(" ")' "$path" --args "$@"
}

# pktgen_value FILE KEY: "KEY: N" from vnet-pktgen's final report (stdout).
pktgen_value() {
    grep -E "^$2: " "$1" | tail -n 1 | awk '{print $2}'
}

# ---- DPDK ------------------------------------------------------------------------

NCPU=$(nproc)
# shellcheck disable=SC2034 # for the scripts
LAST_CPU=$((NCPU - 1))

# dpdk_eal NAME LCORES: EAL_ARGS becomes the EAL arguments of one DPDK
# instance: --lcores LCORES (e.g. "0@0,1@1": lcore 0, the main one, on
# CPU 0), --main-lcore 0, --no-pci, the memory arguments DPDK_MEM (default
# --no-huge -m 512: memfd-backed, nothing reserved in /dev/hugepages) and
# a --file-prefix of its own, vnet-<pid>-NAME, whose runtime directory
# /var/run/dpdk/<prefix> is removed at exit.
dpdk_eal() {
    local prefix="vnet-$VT_ID-$1"
    local mem=(--no-huge -m 512)
    [ -n "${DPDK_MEM+x}" ] && mem=("${DPDK_MEM[@]}")
    # shellcheck disable=SC2034 # for the scripts
    EAL_ARGS=(--lcores "$2" --main-lcore 0 --no-pci "${mem[@]}" --file-prefix="$prefix")
    on_exit rm -rf "/var/run/dpdk/$prefix"
}

# ---- QEMU guests ---------------------------------------------------------------

# guest_kernel: sets KERNEL and KVER for a test guest: VNET_QEMU_KERNEL, or the
# newest /boot/vmlinuz-X whose modules are installed (/lib/modules/X; Debian
# builds virtio_pci and virtio_net as modules, which the initramfs takes from
# there). Fails without one (scripts/install-deps.sh installs linux-image-amd64).
guest_kernel() {
    KERNEL=${VNET_QEMU_KERNEL:-}
    if [ -z "$KERNEL" ]; then
        local k
        for k in $(printf '%s\n' /boot/vmlinuz-* | sort -V -r); do
            if [ -f "/lib/modules/${k#/boot/vmlinuz-}/modules.dep" ]; then
                KERNEL=$k
                break
            fi
        done
    fi
    [ -r "$KERNEL" ] || fail "no /boot/vmlinuz-* with /lib/modules (Debian package linux-image-amd64)"
    KVER=${KERNEL#/boot/vmlinuz-}
}

# qemu_guest_prerequisites: what every TCG-guest test needs (root for its
# netns and taps, QEMU, the initramfs's iperf3 and static busybox, python3
# for QMP and the streams, /dev/net/tun), each missing one a skip; then
# guest_kernel. Sets QEMU, KERNEL, KVER.
qemu_guest_prerequisites() {
    QEMU=$(command -v qemu-system-x86_64 || true)
    [ "$(id -u)" = 0 ] || skip "needs root (network namespaces, taps)"
    [ -n "$QEMU" ] || skip "qemu-system-x86_64 not found (Debian package qemu-system-x86)"
    command -v iperf3 >/dev/null || skip "iperf3 not found (the initramfs takes it)"
    [ -x /bin/busybox ] || skip "/bin/busybox not found (Debian package busybox-static)"
    command -v python3 >/dev/null || skip "python3 not found"
    [ -c /dev/net/tun ] || skip "/dev/net/tun missing"
    guest_kernel
}

# guest_initramfs: the test guest's initramfs (qemu/build_initramfs.sh for
# KVER: busybox, iperf3, virtio modules, qemu/guest_init.sh) as
# WORK/initrd.gz, or fail with the builder's errors (WORK/initramfs.err).
guest_initramfs() {
    bash "$_VT_LIB/../qemu/build_initramfs.sh" "$KVER" "$WORK/initrd.gz" 2>"$WORK/initramfs.err" ||
        fail "initramfs: $(cat "$WORK/initramfs.err")"
}

# The virtio-net offloads a test guest's NIC offers by default: what a
# Linux guest with a vhost-user back end normally negotiates.
GUEST_NET_OFFLOADS=mrg_rxbuf=on,csum=on,guest_csum=on,gso=on,host_tso4=on,guest_tso4=on

# guest_command [--mb MB] [--mem-opts OPTS] [--smp N] [--append TEXT]
#               [--console FILE] [--socket PATH] [--chardev-opts OPTS]
#               [--queues N] [--mac MAC] [--net-opts OPTS] [--offloads LIST]
#               [-- QEMU_ARG...]
# GUEST_CMD becomes the QEMU command line of a test guest (QEMU, KERNEL and
# WORK/initrd.gz, see qemu_guest_prerequisites and guest_initramfs): TCG,
# MB MiB (default 512; -m takes OPTS after it, e.g. ",slots=4,maxmem=1G")
# all on one shared memfd (vnetd maps it), SMP N CPUs (default 1), no
# default devices, the kernel command line "console=ttyS0 quiet panic=-1
# ipv6.disable=1 TEXT" (TEXT: the vnet_* keys of qemu/guest_init.sh), the
# serial console into FILE, no reboot (a reboot ends QEMU), and one
# virtio-net-pci NIC (MAC; its offloads LIST, default GUEST_NET_OFFLOADS,
# "" for none; OPTS more properties after them, e.g. ",packed=on") on a
# vhost-user netdev at PATH (N queue pairs, mq=on, when N > 1) with chardev
# options OPTS (e.g. ",reconnect=1"); QEMU_ARG... last (e.g. -qmp). vectors=0:
# QEMU 7.2 TCG + vhost-user + MSI-X segfaults (peer-baselines.md).
# Run it as: bg_start --log LOG timeout -k 5 SECS "${GUEST_CMD[@]}".
guest_command() {
    local mb=512 mem_opts="" smp=1 append="" console="" sock="" chardev_opts="" queues=1 mac=""
    local net_opts="" offloads=$GUEST_NET_OFFLOADS
    while [ $# -gt 0 ]; do
        case $1 in
            --mb) mb=$2; shift 2 ;;
            --mem-opts) mem_opts=$2; shift 2 ;;
            --smp) smp=$2; shift 2 ;;
            --append) append=$2; shift 2 ;;
            --console) console=$2; shift 2 ;;
            --socket) sock=$2; shift 2 ;;
            --chardev-opts) chardev_opts=$2; shift 2 ;;
            --queues) queues=$2; shift 2 ;;
            --mac) mac=$2; shift 2 ;;
            --net-opts) net_opts=$2; shift 2 ;;
            --offloads) offloads=$2; shift 2 ;;
            --) shift; break ;;
            *) fail "guest_command: unknown option $1" ;;
        esac
    done
    local netdev="type=vhost-user,id=net0,chardev=chr0" device="virtio-net-pci,netdev=net0,mac=$mac"
    if [ "$queues" -gt 1 ]; then
        netdev+=",queues=$queues"
        device+=",mq=on"
    fi
    device+=",vectors=0${offloads:+,$offloads}$net_opts"
    GUEST_CMD=("$QEMU" -accel tcg -m "${mb}M$mem_opts" -smp "$smp" -nodefaults -no-user-config
        -kernel "$KERNEL" -initrd "$WORK/initrd.gz"
        -append "console=ttyS0 quiet panic=-1 ipv6.disable=1 $append"
        -display none -monitor none -serial "file:$console" -no-reboot
        -object "memory-backend-memfd,id=mem,size=${mb}M,share=on" -numa node,memdev=mem
        -chardev "socket,id=chr0,path=$sock$chardev_opts"
        -netdev "$netdev" -device "$device" "$@")
}
