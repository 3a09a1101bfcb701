#!/bin/bash
# vnetd under systemd's notify protocol (deploy/vnetd.service, Type=notify
# with WatchdogSec), against a test listener on NOTIFY_SOCKET
# (lib/notify_listener.py):
#
#   - READY=1 comes once, with the STATUS line naming every port, and when
#     it arrives the VM port's socket already accepts connections;
#   - with WATCHDOG_USEC=200000, WATCHDOG=1 keeps coming while vnetd runs
#     (every 100 ms: at least 5 in 1.5 s; the exact count is timing, not
#     asserted); without WATCHDOG_USEC, none at all;
#   - SIGTERM: STOPPING=1 (with its STATUS) is the last message, and vnetd
#     exits 0;
#   - the messages come in the order systemd expects: READY=1 first,
#     STOPPING=1 last.
#
# Usage: test_sd_notify.sh BUILD_DIR   (as root, like every integration test)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
need_built "$VNETD"
work_dir vnetd-sd-notify

READY_LINE="READY=1|STATUS=2 port(s) open: vm0 (vhost-user) null0 (null)"
STOPPING_LINE="STOPPING=1|STATUS=shutting down"

# run_case LABEL [ENV=VALUE...]: vnetd with a VM port and a discard port,
# NOTIFY_SOCKET pointing at a fresh listener; runs 1.5 s, then SIGTERM.
# MESSAGES is the listener's output.
run_case() {
    local label=$1
    shift
    local notify="$WORK/$label.notify" sock="$WORK/$label.sock"
    MESSAGES="$WORK/$label.messages"
    bg_start --out "$MESSAGES" --err "$WORK/$label-listener.err" \
        python3 "$HERE/lib/notify_listener.py" "$notify" --check-socket "$sock"
    local listener=$BG_PID
    wait_for 10 "($label) the listener did not start" log_has "$WORK/$label-listener.err" "^ready"
    bg_start --log "$WORK/vnetd-$label.log" env NOTIFY_SOCKET="$notify" "$@" \
        "$VNETD" --socket-path "$sock" --null --control-socket ""
    local vnetd=$BG_PID
    wait_for 10 "($label) no READY=1" log_has "$MESSAGES" "^READY=1"
    sleep 1.5
    stop_pid "$vnetd" TERM || fail "($label) vnetd exited with status $? on SIGTERM"
    wait_for 5 "($label) no STOPPING=1" log_has "$MESSAGES" "^STOPPING=1"
    sleep 0.2  # anything after STOPPING=1 would arrive now
    stop_pid "$listener" TERM
    echo "($label) $(grep -c . "$MESSAGES") messages: $(sort "$MESSAGES" | uniq -c | tr '\n' ';')"
    # READY=1 once, first; the socket was listening then; STOPPING=1 last.
    [ "$(grep -c '^READY=1' "$MESSAGES")" = 1 ] || fail "($label) READY=1 $(grep -c '^READY=1' "$MESSAGES") times"
    [ "$(head -n 1 "$MESSAGES")" = "$READY_LINE" ] ||
        fail "($label) first message '$(head -n 1 "$MESSAGES")', expected '$READY_LINE'"
    [ "$(sed -n 2p "$MESSAGES")" = "ready-check $sock listening" ] ||
        fail "($label) at READY=1: $(sed -n 2p "$MESSAGES")"
    [ "$(tail -n 1 "$MESSAGES")" = "$STOPPING_LINE" ] ||
        fail "($label) last message '$(tail -n 1 "$MESSAGES")', expected '$STOPPING_LINE'"
    WATCHDOGS=$(grep -cx 'WATCHDOG=1' "$MESSAGES")
    local others
    others=$(grep -vxF -e "$READY_LINE" -e "ready-check $sock listening" -e "WATCHDOG=1" \
        -e "$STOPPING_LINE" "$MESSAGES")
    [ -z "$others" ] || fail "($label) unexpected messages: $others"
}

run_case watchdog WATCHDOG_USEC=200000
[ "$WATCHDOGS" -ge 5 ] || fail "(watchdog) $WATCHDOGS WATCHDOG=1 in 1.5 s at WATCHDOG_USEC=200000"
log_has "$WORK/vnetd-watchdog.log" "systemd watchdog: WATCHDOG=1 every 100 ms" ||
    fail "(watchdog) vnetd did not log its watchdog interval"
ok "(watchdog) READY=1 with the socket listening, $WATCHDOGS WATCHDOG=1, STOPPING=1 last"

run_case no-watchdog
[ "$WATCHDOGS" = 0 ] || fail "(no-watchdog) $WATCHDOGS WATCHDOG=1 without WATCHDOG_USEC"
ok "(no-watchdog) READY=1, STOPPING=1, no WATCHDOG=1"
pass
