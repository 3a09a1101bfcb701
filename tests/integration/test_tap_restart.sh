#!/bin/bash
# A vnetd restarted at once gets its taps back. A process that dies keeps
# its tap attached until the kernel releases its files, which for io_uring's
# registered files happens from a workqueue after the exit: a new vnetd's
# TUNSETIFF then meets EBUSY. vnetd waits for the release (bounded, with a
# log line) instead of failing.
#   (1) persistent taps, 5 times: vnetd (tap <-> tap) SIGKILLed and started
#       again within 10 ms of its death: the new one opens both taps and
#       runs; how many restarts had to wait is printed (on this kernel
#       nearly all: the old vnetd's files are released ~5-40 ms late).
#   (2) the same with taps vnetd created (not persistent): they are made
#       again once the old ones are gone.
#   (3) a tap that a live process holds: the second vnetd waits the bound
#       (5 s), then exits 1 with the exact message; the first keeps running.
#
# Usage: test_tap_restart.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (taps)"
need_built "$VNETD"

work_dir vnetd-tap-restart
TAP_A=$(link_name vrs a)
TAP_B=$(link_name vrs b)
on_exit ip link del "$TAP_A"
on_exit ip link del "$TAP_B"

opened_both() { log_count "$1" "tap '($TAP_A|$TAP_B)'.*opened" 2; }

# start LOG ARGS...: vnetd on the two taps in the background (VNETD_PID),
# its control socket WORK/vnetd.ctl (the next one takes it over).
start() {
    local log=$1
    shift
    start_vnetd "$log" --tap "$TAP_A" --tap "$TAP_B" --control-socket "$WORK/vnetd.ctl" "$@"
}

# restarts LABEL N ARGS...: N times, SIGKILL the running vnetd and start the
# next at once; each must open both taps and keep running.
restarts() {
    local label=$1 n=$2 i waited=0 log
    shift 2
    start "$WORK/$label-0.log" "$@"
    wait_for 10 "($label) the first vnetd did not open its taps" opened_both "$WORK/$label-0.log"
    for i in $(seq 1 "$n"); do
        kill -KILL "$VNETD_PID"
        { wait "$VNETD_PID"; } 2>/dev/null
        forget "$VNETD_PID"
        log="$WORK/$label-$i.log"
        start "$log" "$@"  # within milliseconds of the old one's death
        wait_for 10 "($label) restart $i: vnetd did not open its taps: $(tail -n 2 "$log")" \
            opened_both "$log"
        running "$VNETD_PID" || fail "($label) restart $i: vnetd exited: $(tail -n 2 "$log")"
        if log_has "$log" "attached elsewhere \(EBUSY\): waiting up to 5 s"; then
            log_has "$log" "released after [0-9]+ ms" || fail "($label) restart $i: no 'released' line"
            waited=$((waited + 1))
        fi
    done
    stop_pid "$VNETD_PID" || fail "($label) vnetd exit status $?"
    ok "($label) $n restarts within milliseconds, all started ($waited had to wait for the release)"
}

echo "== (1) persistent taps"
restarts persist 5 --persist on
ip link del "$TAP_A" && ip link del "$TAP_B" || fail "(1) the persistent taps are gone"

echo "== (2) taps vnetd creates"
restarts created 5
sleep 0.5
ip link show "$TAP_A" >/dev/null 2>&1 && fail "(2) $TAP_A outlived a vnetd that created it"

echo "== (3) a tap a live process holds"
start "$WORK/holder.log"
HOLDER=$VNETD_PID
wait_for 10 "(3) the holder did not open its taps" opened_both "$WORK/holder.log"
T0=$(date +%s%N)
"$VNETD" --tap "$TAP_A" --tap "$TAP_B" --control-socket "$WORK/second.ctl" >"$WORK/second.log" 2>&1
RC=$?
T1=$(date +%s%N)
[ "$RC" = 1 ] || fail "(3) the second vnetd exited $RC, expected 1: $(tail -n 2 "$WORK/second.log")"
log_has "$WORK/second.log" "tap '$TAP_A': TUNSETIFF failed: Device or resource busy \(EBUSY\); still attached elsewhere after waiting 5 s: a single-queue tap of that name is already open elsewhere" ||
    fail "(3) not the expected message: $(tail -n 2 "$WORK/second.log")"
WAITED_MS=$(((T1 - T0) / 1000000))
[ "$WAITED_MS" -ge 5000 ] && [ "$WAITED_MS" -lt 9000 ] || fail "(3) it gave up after $WAITED_MS ms, expected 5 s"
running "$HOLDER" || fail "(3) the holder exited"
stop_pid "$HOLDER" || fail "(3) holder exit status $?"
ok "(3) a held tap: exit 1 after $WAITED_MS ms with the reason; the holder unharmed"

pass "tap restart: restarts within milliseconds start, a held tap fails after the bound"
