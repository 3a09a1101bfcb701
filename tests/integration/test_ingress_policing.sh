#!/bin/bash
# Ingress policing on a VM port: vnet-pktgen --tx -> vnetd -> a tap in a
# netns, with vm0's ingress_policing_rate / _burst set in the config file,
# then changed at run time with `vnetctl port set`.
#
#   (a) rate R1 kbit/s, burst B1 kbit from the config: pktgen sends N frames
#       unpaced. Exactly: sent == delivered (kernel tap rx_packets) +
#       policed (vm0 rx drops "policed" in `vnetctl --json stats`), policed
#       > 0 and delivered > 0. Bound, not speed: the bucket started full no
#       earlier than vnetd's start, so the delivered frame bits are at most
#       B1 * 1000 + R1 * T / 1000 bits, T = µs from just before vnetd
#       started to just after pktgen finished.
#   (b) `vnetctl port set vm0 --ingress-policing-rate 0`: policing off, N
#       more frames all delivered, the policed count unchanged.
#   (c) `vnetctl port set vm0 --ingress-policing-rate R3
#       --ingress-policing-burst B3`: policed again; what (c) delivered is
#       within B3 * 1000 + R3 * T3 / 1000 bits, T3 from just before the set.
#   (d) errors change nothing: an unknown port, no setting given, a
#       negative rate; each exits non-zero with the reason.
#
# Usage: test_ingress_policing.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}
SIZE=1000     # frame bytes: 8000 bits each
R1=2000       # kbit/s
B1=100        # kbit: 12 frames
R3=1000
B3=40         # 5 frames

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir ingress-policing
NS=$(ns_name vpol)
netns_new "$NS"
TAP=$(link_name vpol)
SOCK="$WORK/vm.sock"
CTL="$WORK/vnetd.ctl"
cat >"$WORK/vnetd.toml" <<EOF
[daemon]
control_socket = "$CTL"

[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "$SOCK"
ingress_policing_rate = $R1
ingress_policing_burst = $B1

[[port]]
name = "tap0"
type = "tap"
tap = "$TAP"

[[connect]]
ports = ["vm0", "tap0"]
EOF

START_US=$(_vt_now_us)
start_vnetd "$WORK/vnetd.log" --netns "$NS" --config "$WORK/vnetd.toml"
wait_control
wait_for 10 "vnetd did not listen" test -S "$SOCK"
ip -n "$NS" link set "$TAP" up || fail "$TAP up"

# send LABEL: N frames of SIZE bytes, unpaced.
send() {
    timeout 120 "$PKTGEN" --socket-path "$SOCK" --tx --count "$N" --size "$SIZE" --rate 0 \
        --stats-interval 0 >"$WORK/pktgen-$1.out" 2>"$WORK/pktgen-$1.err" ||
        fail "($1) vnet-pktgen failed: $(tail -3 "$WORK/pktgen-$1.err")"
    check_equal "$1" "sent=$N" "pktgen_tx-packets=$(pktgen_value "$WORK/pktgen-$1.out" tx-packets)"
}

# counters: POLICED (vm0 rx, every queue, from vnetctl --json stats),
# VM_RX (vm0 rx packets), TAP_RX / TAP_RX_BYTES (the kernel's tap counters).
counters() {
    read -r POLICED VM_RX < <(ctl --json stats | python3 -c '
import json, sys
s = json.load(sys.stdin)
vm = [p for p in s["ports"] if p["name"] == "vm0"][0]
print(sum(q["rx"]["drops"].get("policed", 0) for q in vm["queues"]),
      sum(q["rx"]["packets"] for q in vm["queues"]))') || fail "vnetctl --json stats"
    TAP_RX=$(link_stat "$NS" "$TAP" rx_packets)
    TAP_RX_BYTES=$(link_stat "$NS" "$TAP" rx_bytes)
}

# within_bound LABEL BYTES BURST_KBIT RATE_KBPS MICROSECONDS
within_bound() {
    local bits=$(($2 * 8)) bound=$(($3 * 1000 + $4 * $5 / 1000))
    echo "($1) delivered $bits bits; bucket bound $3 kbit + $4 kbit/s * $5 us = $bound bits"
    [ "$bits" -le "$bound" ] || fail "($1) delivered $bits bits, over the bucket's $bound"
}

echo "== (a) $N frames of $SIZE B at vm0's ingress_policing_rate $R1 kbit/s, burst $B1 kbit"
send a
counters
T_A=$(($(_vt_now_us) - START_US))
echo "(a) policed $POLICED, delivered $TAP_RX ($TAP_RX_BYTES B), vm0 rx $VM_RX"
check_equal a "sent=$N" "vnetd_vm0_rx=$VM_RX" "delivered+policed=$((TAP_RX + POLICED))"
[ "$POLICED" -gt 0 ] || fail "(a) nothing policed at $R1 kbit/s"
[ "$TAP_RX" -gt 0 ] || fail "(a) nothing delivered"
check_equal a "tap_rx_bytes=$TAP_RX_BYTES" "frames*size=$((TAP_RX * SIZE))"
within_bound a "$TAP_RX_BYTES" "$B1" "$R1" "$T_A"
POLICED_A=$POLICED
TAP_RX_A=$TAP_RX

echo "== (b) vnetctl port set vm0 --ingress-policing-rate 0: $N frames, none policed"
ctl port set vm0 --ingress-policing-rate 0 >"$WORK/set-b.out" || fail "(b) vnetctl port set failed"
grep -qE "vm0 +0 +$B1" "$WORK/set-b.out" || fail "(b) port set printed: $(cat "$WORK/set-b.out")"
send b
counters
check_equal b "policed_before=$POLICED_A" "policed=$POLICED"
check_equal b "sent=$N" "delivered=$((TAP_RX - TAP_RX_A))"
TAP_RX_B=$TAP_RX
TAP_RX_BYTES_B=$TAP_RX_BYTES

echo "== (c) vnetctl port set vm0 --ingress-policing-rate $R3 --ingress-policing-burst $B3"
SET_US=$(_vt_now_us)
ctl --json port set vm0 --ingress-policing-rate "$R3" --ingress-policing-burst "$B3" \
    >"$WORK/set-c.json" || fail "(c) vnetctl port set failed"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r == {"name": "vm0", "ingress_policing_rate": int(sys.argv[2]),
             "ingress_policing_burst": int(sys.argv[3])}, r' "$WORK/set-c.json" "$R3" "$B3" ||
    fail "(c) port set answered $(cat "$WORK/set-c.json")"
send c
counters
T_C=$(($(_vt_now_us) - SET_US))
delivered=$((TAP_RX - TAP_RX_B))
policed=$((POLICED - POLICED_A))
echo "(c) policed $policed, delivered $delivered"
check_equal c "sent=$N" "delivered+policed=$((delivered + policed))"
[ "$policed" -gt 0 ] || fail "(c) nothing policed at $R3 kbit/s"
within_bound c "$((TAP_RX_BYTES - TAP_RX_BYTES_B))" "$B3" "$R3" "$T_C"

echo "== (d) errors change nothing"
# expect_error LABEL MESSAGE ARGS...: vnetctl exits non-zero and says MESSAGE.
expect_error() {
    local label=$1 message=$2
    shift 2
    if ctl "$@" >"$WORK/err-$label.out" 2>&1; then
        fail "(d) vnetctl $* succeeded"
    fi
    grep -qF -- "$message" "$WORK/err-$label.out" ||
        fail "(d) vnetctl $* said '$(cat "$WORK/err-$label.out")', not '$message'"
    echo "(d) vnetctl $*: $(cat "$WORK/err-$label.out")"
}
expect_error unknown "no port named 'nope'" port set nope --ingress-policing-rate 5
expect_error nothing "nothing to set" port set vm0
expect_error negative "--ingress-policing-rate" port set vm0 --ingress-policing-rate -5
expect_error too-big "must be an integer 0..4294967295" call port.set \
    '{"name":"vm0","ingress_policing_rate":4294967296}'
# The port is `name`, as in port.add and port.del.
expect_error old-key "unknown parameter 'port' (port.set takes name, ingress_policing_rate, ingress_policing_burst)" \
    call port.set '{"port":"vm0","ingress_policing_rate":5}'
ctl --json port list >/dev/null || fail "(d) vnetd stopped answering"
log_has "$WORK/vnetd.log" "port vm0: ingress policing $R3 kbit/s, burst $B3 kbit" ||
    fail "(d) the last setting is not the one logged last"
# Each applied set logs the port's line and the control socket's audit line
# (uid and the setting); a refused one logs neither.
[ "$(grep -c "port vm0: ingress policing" "$WORK/vnetd.log")" = 2 ] ||
    fail "(d) a refused port set was applied: $(grep "ingress policing" "$WORK/vnetd.log")"
[ "$(grep -c "control: uid 0 set port vm0's ingress policing" "$WORK/vnetd.log")" = 2 ] ||
    fail "(d) not one audit line per applied set: $(grep "ingress policing" "$WORK/vnetd.log")"

stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
pass
