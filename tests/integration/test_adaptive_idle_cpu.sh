#!/bin/bash
# Adaptive polling (the default worker mode) gives the CPU back when the
# traffic stops: vnetd with three connected front ends (vnet-pktgen), two
# cross-connected VM ports and one VM port into a discard port, first
# forwards N frames vmB -> vmA, then all three front ends stay connected
# and silent. Over the next 5 s vnetd's CPU time (utime + stime from
# /proc/PID/stat, every thread) must be at most 1 % of the wall time.
#
# This is an upper bound on what an idle vnetd may cost, not a speed
# claim: a worker that kept spinning after the traffic stopped (the poll
# mode's 100 %) fails it by two orders of magnitude, an idle epoll sleep
# with its 100 ms timeout costs ~0. The traffic before it checks that the
# burst went through (exact counts) and that the worker went back to
# sleep afterwards.
#
# Usage: test_adaptive_idle_cpu.sh BUILD_DIR   (as root)
#   VNET_TEST_FRAMES  N (default 20000)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}
WINDOW_S=5

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (vhost-user sockets under the test's directory)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir adaptive-idle
CTL="$WORK/vnetd.ctl"
# No stats file: writing it every second is work of the control thread that
# an idle vnetd need not do (the counts come from vnetctl at the end).
cat >"$WORK/vnetd.toml" <<EOF
[daemon]
control_socket = "$CTL"

[datapath]
mode = "adaptive"

[[port]]
name = "vmA"
type = "vhost-user"
socket_path = "$WORK/a.sock"

[[port]]
name = "vmB"
type = "vhost-user"
socket_path = "$WORK/b.sock"

[[port]]
name = "vmC"
type = "vhost-user"
socket_path = "$WORK/c.sock"

[[port]]
name = "discard"
type = "null"

[[connect]]
ports = ["vmA", "vmB"]

[[connect]]
ports = ["vmC", "discard"]
EOF

start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
for s in a b c; do
    wait_for 10 "vnetd did not listen on $s.sock" test -S "$WORK/$s.sock"
done

# rx_frontend NAME: a silent front end on NAME.sock, posting RX buffers.
rx_frontend() {
    bg_start --out "$WORK/pktgen-$1.out" --err "$WORK/pktgen-$1.err" --stop INT \
        "$PKTGEN" --socket-path "$WORK/$1.sock" --rx --duration 120 --stats-interval 0
    RX_PID=$BG_PID
    wait_for 30 "pktgen on $1.sock did not come up" log_has "$WORK/pktgen-$1.err" "link up"
}
rx_frontend a
A_PID=$RX_PID
rx_frontend c
C_PID=$RX_PID

echo "== $N frames vmB -> vmA"
timeout 120 "$PKTGEN" --socket-path "$WORK/b.sock" --tx --count "$N" --size 64 --stats-interval 0 \
    >"$WORK/pktgen-b-tx.out" 2>"$WORK/pktgen-b-tx.err" || fail "pktgen --tx on vmB failed"
check_equal "tx" "sent=$N" "pktgen_tx-packets=$(pktgen_value "$WORK/pktgen-b-tx.out" tx-packets)"
# vmB's guest went away after sending; a new one connects and stays silent.
rx_frontend b
B_PID=$RX_PID

# cpu_ticks PID: utime + stime of every thread so far, in clock ticks.
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}
HZ=$(getconf CLK_TCK)
sleep 1 # past the spin after the last connect (at most adaptive_spin_us)
running "$VNETD_PID" || fail "vnetd exited"
before=$(cpu_ticks "$VNETD_PID")
start_us=$(_vt_now_us)
sleep "$WINDOW_S"
after=$(cpu_ticks "$VNETD_PID")
elapsed_us=$(($(_vt_now_us) - start_us))
used_us=$(((after - before) * 1000000 / HZ))
echo "(idle) vnetd used $((after - before)) ticks (${used_us} us) of CPU in ${elapsed_us} us" \
    "with 3 silent front ends (upper bound 1 %)"
[ $((used_us * 100)) -le "$elapsed_us" ] ||
    fail "(idle) vnetd used ${used_us} us of CPU in ${elapsed_us} us: over 1 % while idle"

for pid in "$A_PID" "$B_PID" "$C_PID"; do
    stop_pid "$pid" INT || fail "a pktgen --rx exited with status $?"
done
check_equal "rx" "sent=$N" "pktgen_a_rx-verified=$(pktgen_value "$WORK/pktgen-a.out" rx-verified)"
check_zero "rx" "pktgen_a_rx-bad=$(pktgen_value "$WORK/pktgen-a.out" rx-bad)" \
    "pktgen_a_rx-lost=$(pktgen_value "$WORK/pktgen-a.out" rx-lost)"
"$VNETCTL" --socket "$CTL" --json stats >"$WORK/stats.json" || fail "vnetctl stats"
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
read -r b_rx a_tx a_drops < <(vnetd_stats "$WORK/stats.json" vmB.rx.packets vmA.tx.packets vmA.tx.drops)
check_equal "vnetd" "sent=$N" "vnetd_vmB_rx=$b_rx" "vnetd_vmA_tx=$a_tx"
check_zero "vnetd" "vnetd_vmA_tx_drops=$a_drops"
pass
