#!/bin/bash
# vnetd as QEMU's back-end program conventions (docs/interop/vhost-user.rst
# "Backend program conventions") and its sockets' permissions:
#
#   - `--print-capabilities` prints exactly {"type":"net"} (the
#     vhost-user.json schema defines no features for net) and exits 0,
#     ignoring every other argument, even ones vnetd does not know;
#   - `--fd` with `--socket-path`, and `--fd` with `--client`, exit 1 with
#     their exact message, and nothing is created at the path;
#   - with no port vnetd starts empty and serves vnetctl; ports added then,
#     and README's first command, get their missing socket directories;
#   - with JOURNAL_STREAM naming its stderr, every line is <N>[who] with no
#     timestamp, the stats are one line, a start-up error is <3>;
#   - a VM socket with socket_owner/socket_group/socket_mode and the control
#     socket with control_socket_group/mode appear with them already in
#     place: an inotify watcher and a tight lstat loop, both started before
#     vnetd, see each socket with exactly one look (the configured one),
#     never an IN_CREATE or IN_ATTRIB on its name (it is renamed into place);
#   - the owner given (nobody) can use it: vnet-pktgen run as nobody:nogroup
#     brings a device up and sends through vnetd to its discard port, which
#     counts every frame; a user outside owner and group is refused (EACCES).
#
# Usage: test_backend_conventions.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (socket owners)"
need_built "$VNETD" "$PKTGEN"
command -v setpriv >/dev/null || skip "setpriv not found"
work_dir vnetd-conventions

# --- --print-capabilities
for args in "--print-capabilities" "--socket-path /nonexistent/x --print-capabilities --bogus 1"; do
    # shellcheck disable=SC2086
    out=$("$VNETD" $args 2>"$WORK/caps.err")
    rc=$?
    [ "$rc" = 0 ] || fail "vnetd $args: exit status $rc"
    [ "$out" = '{"type":"net"}' ] || fail "vnetd $args printed '$out'"
    [ ! -s "$WORK/caps.err" ] || fail "vnetd $args wrote to stderr: $(cat "$WORK/caps.err")"
done
ok "--print-capabilities prints {\"type\":\"net\"} and exits 0"

# --- --fd is incompatible with --socket-path (and with --client)
refused() { # EXPECTED-MESSAGE ARGS...
    local want=$1 out rc
    shift
    out=$("$VNETD" "$@" --control-socket "" 2>&1)
    rc=$?
    [ "$rc" = 1 ] || fail "vnetd $*: exit status $rc, expected 1 (output: $out)"
    [ "$out" = "vnetd: $want" ] || fail "vnetd $*: '$out', expected 'vnetd: $want'"
}
exec 3<>"$WORK/not-a-socket"
refused "--fd and --socket-path cannot be given together: --fd serves a listening socket vnetd inherited, --socket-path makes one" \
    --fd 3 --socket-path "$WORK/both.sock" --null
[ ! -e "$WORK/both.sock" ] || fail "--fd with --socket-path created $WORK/both.sock"
refused "--fd and --client cannot be given together: --fd is a listening socket" \
    --fd 3 --client --null
exec 3<&-
ok "--fd with --socket-path or --client: exit 1 with the message"

# --- a first run on a fresh host: no port given, vnetd starts empty (like
# ovs-vswitchd) and waits for vnetctl; every missing socket directory is
# made, a VM socket's own one for its group (0750 root:nogroup)
refused "give two ports to cross-connect (--socket-path, --tap, --null), --config FILE, or no port to start empty and add ports with vnetctl" \
    --null
refused "no ports and no control socket: nothing to do (give ports, --config FILE or --control-socket PATH)"
FRESH="$WORK/fresh"
CTL="$FRESH/run/vnetd.ctl"
start_vnetd "$WORK/empty.log" --control-socket "$CTL"
wait_control
[ "$(ctl --json port list | jq length)" = 0 ] || fail "vnetd started empty has ports: $(ctl --json port list)"
ctl port add vhost-user vm0 --socket-path "$FRESH/vm/vm0.sock" --socket-group nogroup \
    --socket-mode 0660 >/dev/null || fail "port add into a missing directory"
looks="$(stat -c '%a %U %G' "$FRESH/run") / $(stat -c '%a %U %G' "$FRESH/vm") / $(stat -c '%a %G' "$FRESH/vm/vm0.sock")"
[ "$looks" = "755 root root / 750 root nogroup / 660 nogroup" ] ||
    fail "fresh directories / socket (mode owner group): $looks"
stop_pid "$VNETD_PID" TERM || fail "vnetd (started empty) exited with status $? on SIGTERM"
# README's first command, its directory missing (--null for the tap)
start_vnetd "$WORK/first.log" --socket-path "$FRESH/first/vm0.sock" --null --control-socket ""
wait_for 10 "vnetd did not listen in a missing directory: $(cat "$WORK/first.log")" \
    test -S "$FRESH/first/vm0.sock"
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
ok "started empty with only a control socket; missing socket directories made (0755; 0750 for a group)"

# --- under systemd (JOURNAL_STREAM names stderr): every line starts with its
# sd-daemon priority and has no timestamp; the stats are one line; a
# start-up error is <3>
JLOG="$WORK/journal.log"
: >"$JLOG"
JOURNAL_STREAM=$(stat -c '%d:%i' "$JLOG") "$VNETD" --config "$WORK/missing.toml" 2>>"$JLOG"
[ "$(cat "$JLOG")" = "<3>vnetd: config $WORK/missing.toml: no such file" ] ||
    fail "a missing config under systemd: '$(cat "$JLOG")'"
: >"$JLOG"
bg_start --out /dev/null --err "$JLOG" env JOURNAL_STREAM="$(stat -c '%d:%i' "$JLOG")" "$VNETD" \
    --socket-path "$FRESH/j/vm0.sock" --null --control-socket "" --stats-interval-s 1
VNETD_PID=$BG_PID
wait_for 10 "no stats line in $JLOG" log_has "$JLOG" "stats after"
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
! grep -qvE '^<[2-7]>\[[^]]+\] ' "$JLOG" || fail "lines without a priority: $(grep -vE '^<[2-7]>\[' "$JLOG" | head -3)"
log_has "$JLOG" '^<6>\[vnetd\] final stats after [0-9.]+ s \(.*\): vm0/0 rx 0 pkts .*; null0/0 tx 0 pkts .* drops 0$' ||
    fail "no one-line final stats: $(grep -A2 'final stats' "$JLOG")"
ok "JOURNAL_STREAM: $(wc -l <"$JLOG") lines, each <N>[who] with no timestamp; stats on one line"

# --- owner, group and mode in place before the sockets appear
chmod 0755 "$WORK"  # nobody must reach the sockets
DIR="$WORK/run"
mkdir -m 0755 "$DIR"
STOP="$WORK/stop-watching"
bg_start --out "$WORK/watch.out" --err "$WORK/watch.err" \
    python3 "$HERE/lib/watch_socket_access.py" "$DIR" vm0.sock vnetd.ctl --until "$STOP"
WATCH_PID=$BG_PID
wait_for 10 "the watcher did not start" log_has "$WORK/watch.err" "^ready"
STATS="$WORK/stats.json"
start_vnetd "$WORK/vnetd.log" --socket-path "$DIR/vm0.sock" --null \
    --socket-owner nobody --socket-group nogroup --socket-mode 0660 \
    --control-socket "$DIR/vnetd.ctl" --control-socket-group nogroup --control-socket-mode 0660 \
    --stats-file "$STATS"
wait_for 10 "vnetd did not listen" log_has "$WORK/vnetd.log" "listening on"
wait_for 10 "vnetd did not open its control socket" log_has "$WORK/vnetd.log" "control socket"
touch "$STOP"
wait_until 10 exited "$WATCH_PID"  # it ends by itself once $STOP exists
stop_pid "$WATCH_PID" TERM 10 || fail "the watcher failed: $(cat "$WORK/watch.err")"
cat "$WORK/watch.out"
nobody=$(id -u nobody)
nogroup=$(getent group nogroup | cut -d: -f3)
check_looks() { # NAME MODE UID GID
    local seen events
    seen=$(grep -c "^$1 seen " "$WORK/watch.out")
    [ "$seen" = 1 ] || fail "$1 was seen $seen ways: $(grep "^$1 seen" "$WORK/watch.out")"
    grep -qx "$1 seen $2 $3 $4" "$WORK/watch.out" ||
        fail "$1 was seen as $(grep "^$1 seen" "$WORK/watch.out"), expected mode $2 uid $3 gid $4"
    events=$(grep "^$1 event" "$WORK/watch.out")
    [ "$events" = "$1 event IN_MOVED_TO" ] ||
        fail "$1: $events (expected only IN_MOVED_TO: made elsewhere, renamed into place)"
}
check_looks vm0.sock 660 "$nobody" "$nogroup"
check_looks vnetd.ctl 660 0 "$nogroup"
ok "both sockets appeared with their owner, group and mode, and were never changed"

# --- the owner can use the socket, others cannot
N=1000
setpriv --reuid nobody --regid nogroup --clear-groups "$PKTGEN" --socket-path "$DIR/vm0.sock" \
    --tx --count "$N" --size 64 --stats-interval 0 >"$WORK/pktgen.out" 2>"$WORK/pktgen.err" ||
    fail "vnet-pktgen as nobody could not use the socket: $(tail -3 "$WORK/pktgen.err")"
[ "$(pktgen_value "$WORK/pktgen.out" tx-packets)" = "$N" ] || fail "pktgen as nobody sent $(pktgen_value "$WORK/pktgen.out" tx-packets) frames"
daemon_uid=$(id -u daemon)
if setpriv --reuid daemon --regid daemon --clear-groups "$PKTGEN" --socket-path "$DIR/vm0.sock" \
    --tx --count 1 --stats-interval 0 --connect-timeout 1 >/dev/null 2>"$WORK/pktgen-denied.err"; then
    fail "vnet-pktgen as daemon (uid $daemon_uid) used a 0660 nobody:nogroup socket"
fi
grep -q "Permission denied" "$WORK/pktgen-denied.err" ||
    fail "pktgen as daemon failed, but not with EACCES: $(tail -2 "$WORK/pktgen-denied.err")"
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
read -r got < <(vnetd_stats "$STATS" null0.tx.packets)
check_equal "owner's traffic" "sent=$N" "null0_tx=$got"
[ ! -e "$DIR/vm0.sock" ] && [ ! -e "$DIR/vnetd.ctl" ] || fail "sockets left after exit: $(ls "$DIR")"
[ -z "$(ls -A "$DIR")" ] || fail "files left in $DIR: $(ls -A "$DIR")"
pass
