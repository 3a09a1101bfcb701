#!/bin/bash
# Restart without a guest reboot (VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD):
# vnetd is SIGKILLed under traffic and started again; the front end
# reconnects, hands back its inflight buffer, and the new vnetd resubmits
# exactly what the dead one had taken and not completed.
#
#   vm0: vnet-pktgen --tx --reconnect (unpaced)  ┐ cross-connect
#   vm1: vnet-pktgen --tx --reconnect --rate 1   ┘ in one vnetd
#
# Neither pktgen posts RX buffers, so each side's destination never takes:
# the cross-connect waits (lossless backpressure) with up to tx_batch TX
# chains taken from the source ring and held. That is what makes "in
# flight at the kill" certain rather than a matter of timing. K times:
# SIGKILL vnetd, start it at once on the same config, and wait until both
# pktgens are back.
#   - each new vnetd logs "[vm0...] vring 1: inflight tracking on, N
#     resumed from the previous back end" with N > 0 (vm0's held chains);
#   - pktgen vm0 exits 0 with tx-reconnects == K: its driver ring stops
#     the run ("TX used ring: used id not in flight") on a used entry for a
#     head it does not have out, so no chain was completed twice;
#   - vnetctl show reports the resumed count of vm0's TX ring, and the
#     stats (vnetctl --json stats: vm0 rx inflight_resumed) and the metrics
#     endpoint (vnetd_port_inflight_resumed_total) the last restart's N.
# All of it twice: split rings, then packed rings (--packed, with a queue
# size that is not a power of two), whose region also tells the new vnetd
# where the ring stands.
#
# Usage: test_inflight_restart.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_RESTARTS  K (default 3)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
K=${VNET_TEST_RESTARTS:-3}

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (like every integration test)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetd-inflight
SOCK0="$WORK/vm0.sock"
SOCK1="$WORK/vm1.sock"
CTL="$WORK/control.sock"
cat >"$WORK/vnetd.toml" <<EOF
[daemon]
control_socket = "$CTL"
metrics_address = "127.0.0.1:0"

[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "$SOCK0"

[[port]]
name = "vm1"
type = "vhost-user"
socket_path = "$SOCK1"

[[connect]]
ports = ["vm0", "vm1"]
EOF

# start_vnetd_both LOG: vnetd of vnetd.toml, logging to LOG, until both
# its sockets listen; VNETD_PID.
start_vnetd_both() {
    start_vnetd "$1" --config "$WORK/vnetd.toml"
    wait_for 10 "vnetd did not listen: $(tail -n 2 "$1")" log_count "$1" "listening on" 2
}

# resumed_on LOG: N of vm0's TX ring line, empty if there is none yet.
resumed_on() {
    grep -E "\[[^]]*vm0[^]]*\] vring 1: inflight tracking on, [0-9]+ resumed" "$1" |
        tail -n 1 | sed -E 's/.*on, ([0-9]+) resumed.*/\1/'
}
has_resumed_line() { [ -n "$(resumed_on "$1")" ]; }

# run_format FMT RING_SIZE PKTGEN_ARGS...: the whole scenario for one ring format.
run_format() {
    FMT=$1
    RING_SIZE=$2
    shift 2
    RING_ARGS=("$@")
    total=0
    start_vnetd_both "$WORK/$FMT-vnetd-0.log"
    bg_start --out "$WORK/$FMT-pktgen-vm1.out" --err "$WORK/$FMT-pktgen-vm1.err" "$PKTGEN" \
        --socket-path "$SOCK1" "${RING_ARGS[@]}" --tx --reconnect --rate 1 --connect-timeout 20 --stats-interval 0 \
        --src-mac 02:00:00:00:00:02 --dst-mac 02:00:00:00:00:01
    PKTGEN1_PID=$BG_PID
    bg_start --out "$WORK/$FMT-pktgen-vm0.out" --err "$WORK/$FMT-pktgen-vm0.err" "$PKTGEN" \
        --socket-path "$SOCK0" "${RING_ARGS[@]}" --tx --reconnect --connect-timeout 20 --stats-interval 0 \
        --drain-timeout 1
    PKTGEN0_PID=$BG_PID
    # A pktgen that does not come back says why on its stderr (a refused
    # handshake, a reply timeout, the used-ring check): shown on failure.
    fail_log "$WORK/$FMT-pktgen-vm0.err" 20
    fail_log "$WORK/$FMT-pktgen-vm1.err" 20
    wait_for 10 "vm0's TX ring did not start with inflight tracking" \
        has_resumed_line "$WORK/$FMT-vnetd-0.log"
    check_equal "($FMT) first vnetd resumes nothing" expected=0 resumed="$(resumed_on "$WORK/$FMT-vnetd-0.log")"
    wait_for 10 "vm1 did not connect" log_has "$WORK/$FMT-vnetd-0.log" "\[[^]]*vm1[^]]*\] vring 1: inflight"
    sleep 1  # vm0's ring fills; vnetd holds a batch the destination never takes

    for i in $(seq 1 "$K"); do
        kill -KILL "$VNETD_PID"
        { wait "$VNETD_PID"; } 2>/dev/null
        forget "$VNETD_PID"
        log="$WORK/$FMT-vnetd-$i.log"
        start_vnetd_both "$log"
        wait_for 30 "($FMT, restart $i) pktgen vm0 did not come back" has_resumed_line "$log"
        wait_for 30 "($FMT, restart $i) pktgen vm1 did not come back" \
            log_has "$log" "\[[^]]*vm1[^]]*\] vring 1: inflight"
        n=$(resumed_on "$log")
        [ "$n" -gt 0 ] || fail "($FMT, restart $i) vm0's TX ring resumed nothing (vnetd held a batch)"
        [ "$n" -le "$RING_SIZE" ] || fail "($FMT, restart $i) resumed $n, more than the ring holds"
        ok "($FMT, restart $i) vm0's TX ring resumed $n chains the dead vnetd had taken"
        total=$((total + n))
        running "$PKTGEN0_PID" || fail "($FMT, restart $i) pktgen vm0 exited: $(tail -n 3 "$WORK/$FMT-pktgen-vm0.err")"
        sleep 1
    done

    show=$(ctl show vm0 2>&1) || fail "vnetctl show vm0: $show"
    echo "$show" | grep -qE "inflight resumed [1-9][0-9]*" ||
        fail "vnetctl show vm0 has no 'inflight resumed N > 0': $show"
    ok "($FMT) vnetctl show vm0 reports the resumed count"
    ctl --json stats >"$WORK/$FMT-stats.json" || fail "vnetctl stats"
    METRICS_PORT=$(sed -nE 's|.*metrics at http://127.0.0.1:([0-9]+)/metrics.*|\1|p' "$log" | tail -n 1)
    [ -n "$METRICS_PORT" ] || fail "($FMT) the last vnetd did not say where its metrics are"
    python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
        "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/$FMT-metrics.txt" || fail "scrape of the metrics endpoint"
    metric=$(sed -nE 's/^vnetd_port_inflight_resumed_total\{port="vm0",queue="0",direction="rx"\} ([0-9]+).*/\1/p' \
        "$WORK/$FMT-metrics.txt")
    check_equal "($FMT) the last restart's resumed chains (vm0's TX ring = its rx direction)" "log=$n" \
        "stats=$(vnetd_stats "$WORK/$FMT-stats.json" vm0.rx.inflight_resumed)" "metrics=$metric"

    stop_pid "$PKTGEN0_PID" INT || fail "pktgen vm0 exit status $? (a chain completed twice?): $(tail -n 3 "$WORK/$FMT-pktgen-vm0.err")"
    grep -q "used id not in flight" "$WORK/$FMT-pktgen-vm0.err" && fail "pktgen vm0 saw a chain completed twice"
    check_equal "($FMT) pktgen vm0 reconnects" restarts="$K" \
        tx-reconnects="$(pktgen_value "$WORK/$FMT-pktgen-vm0.out" tx-reconnects)"
    stop_pid "$PKTGEN1_PID" INT || fail "pktgen vm1 exit status $?"
    stop_pid "$VNETD_PID" || fail "vnetd exit status $?"
    ok "($FMT) $K SIGKILLs under traffic, $total chains resumed, none completed twice"
    grand=$((grand + total))
}

grand=0
run_format split 256 --queue-size 256
run_format packed 200 --packed --queue-size 200
pass "$K SIGKILLs under traffic per ring format, $grand chains resumed, none completed twice"
