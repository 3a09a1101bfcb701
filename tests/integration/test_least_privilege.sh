#!/bin/bash
# --user/--group: vnetd opens its taps and sockets as root, then becomes
# nobody:nogroup keeping only CAP_NET_ADMIN, on the control thread alone,
# while ports can still be added at run time; and nothing at all when they
# cannot.
#   (1) vnetd (a switch, a VM port, a tap) with a control socket: every id
#       in /proc/PID/status is 65534; the main thread's CapEff and CapPrm
#       are exactly CAP_NET_ADMIN (0x1000), every other thread has none,
#       the bounding set is empty; frames still flow (vnet-pktgen ->
#       switch -> tap, counted by vnetd); a tap added with vnetctl at run
#       time opens (TUNSETIFF needs CAP_NET_ADMIN); SIGTERM: exit 0, its
#       sockets removed from the directory nobody owns.
#   (2) without a control socket or config file: no capability at all.
#   (3) bad input, exact messages, exit 1: an unknown user; a group alone.
#
# Usage: test_least_privilege.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (taps, setuid)"
getent passwd nobody >/dev/null || fail "no user nobody"
getent group nogroup >/dev/null || fail "no group nogroup"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetd-least-privilege
# The sockets' directory belongs to the user vnetd becomes: it removes
# them there at exit.
RUN="$WORK/run"
mkdir "$RUN" && chown nobody:nogroup "$RUN" && chmod 0755 "$WORK" || fail "making $RUN"
TAP=$(link_name vlp t)
TAP2=$(link_name vlp u)
on_exit ip link del "$TAP"
on_exit ip link del "$TAP2"
N=2000

# thread_caps PID: "TID CapEff" per thread.
thread_caps() {
    local t
    for t in /proc/"$1"/task/*; do
        echo "${t##*/} $(awk '/^CapEff/ {print $2}' "$t/status")"
    done
}
status_field() { awk -v f="$2:" '$1 == f {$1 = ""; print substr($0, 2)}' /proc/"$1"/status; }

echo "== (1) with run-time ports: nobody, CAP_NET_ADMIN on the control thread"
cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$RUN/ctl.sock"
stats_file = "$RUN/stats.json"
user = "nobody"
group = "nogroup"
[[switch]]
name = "s0"
[[port]]
name = "vm"
type = "vhost-user"
socket_path = "$RUN/vm.sock"
switch = "s0"
[[port]]
name = "$TAP"
type = "tap"
switch = "s0"
TOML
start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
wait_for 10 "vnetd did not drop its privileges" log_has "$WORK/vnetd.log" "running as uid"
log_has "$WORK/vnetd.log" "running as uid 65534, gid 65534, capabilities: cap_net_admin \(for ports added at run time\)" ||
    fail "(1) the log line: $(grep 'running as' "$WORK/vnetd.log")"
for f in Uid Gid; do
    [ "$(status_field "$VNETD_PID" $f)" = "65534 65534 65534 65534" ] ||
        fail "(1) $f: $(status_field "$VNETD_PID" $f)"
done
[ -z "$(status_field "$VNETD_PID" Groups)" ] || fail "(1) supplementary groups: $(status_field "$VNETD_PID" Groups)"
check_equal 1 "CapPrm=$(status_field "$VNETD_PID" CapPrm)" "net_admin=0000000000001000"
check_equal 1 "CapBnd=$(status_field "$VNETD_PID" CapBnd)" "none=0000000000000000"
thread_caps "$VNETD_PID" >"$WORK/caps.txt"
MAIN_CAPS=$(awk -v p="$VNETD_PID" '$1 == p {print $2}' "$WORK/caps.txt")
check_equal 1 "main_thread_CapEff=$MAIN_CAPS" "net_admin=0000000000001000"
OTHERS=$(awk -v p="$VNETD_PID" '$1 != p && $2 != "0000000000000000"' "$WORK/caps.txt")
[ -z "$OTHERS" ] || fail "(1) threads with capabilities: $OTHERS"
[ "$(wc -l <"$WORK/caps.txt")" -ge 2 ] || fail "(1) no worker thread: $(cat "$WORK/caps.txt")"
ok "(1) uid/gid 65534, no groups, CAP_NET_ADMIN on the main thread only ($(wc -l <"$WORK/caps.txt") threads)"

timeout 60 "$PKTGEN" --socket-path "$RUN/vm.sock" --tx --count "$N" --rate 100000 \
    --dst-mac ff:ff:ff:ff:ff:ff >"$WORK/tx.out" 2>"$WORK/tx.log" || fail "(1) vnet-pktgen failed"
tap_tx() { vnetd_stats "$RUN/stats.json" "$TAP.tx.packets"; }
tap_tx_is() { [ "$(tap_tx)" = "$1" ]; }
wait_for 5 "(1) the tap did not get the $N frames: $(tap_tx)" tap_tx_is "$N"
ok "(1) $N frames vnet-pktgen -> switch -> tap as nobody"

"$VNETCTL" --socket "$RUN/ctl.sock" port add tap "$TAP2" --switch s0 >"$WORK/add.out" 2>&1 ||
    fail "(1) vnetctl port add tap as nobody: $(cat "$WORK/add.out")"
ip link show "$TAP2" >/dev/null 2>&1 || fail "(1) $TAP2 was not created"
ok "(1) a tap added at run time opened with the kept CAP_NET_ADMIN"

stop_pid "$VNETD_PID" || fail "(1) vnetd exit status $?"
[ ! -e "$RUN/vm.sock" ] && [ ! -e "$RUN/ctl.sock" ] || fail "(1) sockets left in $RUN: $(ls "$RUN")"
ok "(1) exit 0, sockets removed"

echo "== (2) no run-time ports: no capability"
start_vnetd "$WORK/vnetd2.log" --socket-path "$RUN/vm2.sock" --tap "$TAP" \
    --control-socket "" --user nobody
wait_for 10 "(2) vnetd did not drop its privileges" log_has "$WORK/vnetd2.log" "running as uid"
log_has "$WORK/vnetd2.log" "running as uid 65534, gid 65534, no capabilities" ||
    fail "(2) the log line: $(grep 'running as' "$WORK/vnetd2.log")"
thread_caps "$VNETD_PID" >"$WORK/caps2.txt"
OTHERS=$(awk '$2 != "0000000000000000"' "$WORK/caps2.txt")
[ -z "$OTHERS" ] || fail "(2) threads with capabilities: $OTHERS"
check_equal 2 "CapPrm=$(status_field "$VNETD_PID" CapPrm)" "none=0000000000000000"
stop_pid "$VNETD_PID" || fail "(2) vnetd exit status $?"
ok "(2) nogroup by default (the user's primary group), no capability in any thread"

echo "== (3) bad input"
expect_exit() {  # CASE MESSAGE ARGS...
    local case=$1 msg=$2 rc
    shift 2
    "$VNETD" --socket-path "$RUN/bad.sock" --null "$@" >"$WORK/bad.log" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "($case) exit $rc, expected 1: $(cat "$WORK/bad.log")"
    grep -qxF -- "$msg" "$WORK/bad.log" || fail "($case) expected '$msg', got: $(cat "$WORK/bad.log")"
    ok "($case) $msg"
}
expect_exit 3a "vnetd: user 'no-such-user-$VT_ID' is no user name or uid" --user "no-such-user-$VT_ID"
expect_exit 3b "vnetd: group is given without user: give both, or user alone" --group nogroup

pass "least privilege: nobody with CAP_NET_ADMIN on the control thread only, none without run-time ports"
