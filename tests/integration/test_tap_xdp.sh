#!/bin/bash
# XDP on vnetd's taps (docs/USAGE.md "XDP on the tap"): vnet-pktgen (the
# guest) -> vnetd -> a tap that runs one of the shipped programs
# (<build>/bpf/*.bpf.o), with exact counts:
#
#   drop      N frames: the tap's rx_dropped rises by N, rx_packets by 0,
#             and a tcpdump on the tap sees none of them. vnetd's tap tx
#             counts N (the write succeeds; the kernel drops after it).
#   pass      rx_packets rises by N, rx_dropped by 0, tcpdump sees N.
#   generic   the pass program with --tap-xdp-mode generic: the link shows
#             xdpgeneric, and rx_packets rises by N.
#   redirect  the program redirects through redirect_map[0] to a second tap
#             (RTAP); tap_probe reads RTAP's queue and counts exactly N;
#             TAP's rx_packets and RTAP's tx_packets rise by N, rx_dropped 0.
#
# Each of drop, pass and redirect must attach in native mode (`ip -d link
# show` says "xdp", not "xdpgeneric"), with the program id vnetd's stats
# JSON reports, and the program must be gone from the link after vnetd
# exits on SIGTERM. For that the tap is made by this test (ip tuntap,
# persistent) so that it outlives vnetd; vnetd attaches to it.
#
# Bad input, each: vnetd exits 1 and its last stderr line is exactly the
# expected message: a missing file, a missing section, a redirect to an
# interface that does not exist.
#
# Topology: one private namespace NS (IPv6 off: the stack sends nothing of
# its own) holds the taps, and vnetd and tap_probe run in it.
#
# Usage: test_tap_xdp.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_FRAMES   N (default 20000)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
PROBE="$BUILD_DIR/tests/integration/tools/tap_probe"
BPF="$BUILD_DIR/bpf"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap, BPF)"
need_commands ip python3 tcpdump timeout
for bin in "$VNETD" "$PKTGEN" "$PROBE" "$BPF/xdp_drop.bpf.o" "$BPF/xdp_pass.bpf.o" \
    "$BPF/xdp_redirect.bpf.o"; do
    [ -e "$bin" ] || fail "$bin not built"
done

ID=$VT_ID
work_dir vnetd-tap-xdp
NS=$(ns_name vxdp)
netns_new "$NS"
# Both taps live in NS, which is deleted at exit (and them with it).
TAP=$(link_name vxa)
RTAP=$(link_name vxr)
ip -n "$NS" tuntap add dev "$TAP" mode tap vnet_hdr || fail "ip tuntap add $TAP"
ip -n "$NS" link set "$TAP" up || fail "$TAP up"

# xdp_state DEV: "native ID", "generic ID" or "none", from ip -d link show:
# its first line names the mode ("mtu 1500 xdp" or "mtu 1500 xdpgeneric"),
# a later "prog/xdp id N" the program.
xdp_state() {
    local out first id
    out=$(ip -n "$NS" -d link show dev "$1") || { echo "missing"; return; }
    first=$(head -n 1 <<<"$out")
    id=$(grep -oE 'prog/xdp id [0-9]+' <<<"$out" | awk '{print $3}')
    if grep -qw "xdpgeneric" <<<"$first"; then
        echo "generic $id"
    elif grep -qw "xdp" <<<"$first"; then
        echo "native $id"
    else
        echo "none"
    fi
}

# stats_xdp FILE PORT: "MODE ID PROGRAM" from vnetd's stats JSON.
stats_xdp() {
    python3 - "$1" "$2" <<'PY'
import json, sys
ports = {p["name"]: p for p in json.load(open(sys.argv[1]))["ports"]}
x = ports[sys.argv[2]].get("xdp")
print(f'{x["mode"]} {x["id"]} {x["program"]}' if x else "none")
PY
}

# start_labelled_vnetd LABEL ARGS...: vnetd in NS on TAP, its guest side at SOCK.
start_labelled_vnetd() {
    local label=$1
    shift
    SOCK="$WORK/$label.sock"
    STATS="$WORK/vnetd-$label.json"
    LOG="$WORK/vnetd-$label.log"
    start_vnetd "$LOG" --netns "$NS" --socket-path "$SOCK" --tap "$TAP" --stats-file "$STATS" \
        --control-socket "$WORK/vnetd-$label.ctl" "$@"
    wait_for 10 "($label) vnetd did not listen" log_has "$LOG" "listening on"
}

# send LABEL: pktgen sends exactly N frames of 64 B through vnetd.
send() {
    timeout 120 "$PKTGEN" --socket-path "$SOCK" --tx --count "$N" --size 64 --stats-interval 0 \
        >"$WORK/pktgen-$1.out" 2>"$WORK/pktgen-$1.err" || fail "($1) vnet-pktgen failed"
    local sent
    sent=$(pktgen_value "$WORK/pktgen-$1.out" tx-packets)
    [ "$sent" = "$N" ] || fail "($1) pktgen sent ${sent:-nothing}, expected $N"
}

# stop_vnetd LABEL EXPECTED_MODE: SIGTERM, exit 0; the stats JSON names the
# program and mode that were on the link; the link runs no program after.
stop_vnetd() {
    local label=$1 want=$2 seen
    seen=$(xdp_state "$TAP")
    stop_pid "$VNETD_PID" TERM || fail "($label) vnetd exited with status $? on SIGTERM"
    local reported
    reported=$(stats_xdp "$STATS" "$TAP")
    echo "($label) link while running: $seen; vnetd stats: $reported"
    [ "${seen%% *}" = "$want" ] || fail "($label) the link ran '$seen', expected $want mode"
    [ "$(awk '{print $1, $2}' <<<"$reported")" = "$seen" ] ||
        fail "($label) vnetd reports '$reported', the link ran '$seen'"
    local after
    after=$(xdp_state "$TAP")
    [ "$after" = "none" ] || fail "($label) after vnetd exited the link still runs: $after"
    echo "($label) after SIGTERM: $TAP runs no XDP program"
}

# counters: tap rx_packets, rx_dropped, vnetd's tap tx count comes later.
snapshot() {
    RX0=$(link_stat "$NS" "$TAP" rx_packets)
    DROP0=$(link_stat "$NS" "$TAP" rx_dropped)
}

start_capture() {
    bg_start --out "$WORK/tcpdump-$1.out" --err "$WORK/tcpdump-$1.err" \
        ip netns exec "$NS" tcpdump -i "$TAP" -Q in -n -s 0 -B 65536 -Z root -w "$WORK/$1.pcap"
    TCPDUMP_PID=$BG_PID
    wait_for 10 "($1) tcpdump did not start" log_has "$WORK/tcpdump-$1.err" "listening on"
}

# stop_capture LABEL: CAP_RECEIVED = frames the capture saw.
stop_capture() {
    sleep 1.5  # TPACKET_V3 hands over a block when it is full or 1 s old
    stop_pid "$TCPDUMP_PID" INT
    CAP_RECEIVED=$(grep -oE "^[0-9]+ packets received by filter" "$WORK/tcpdump-$1.err" |
        awk '{print $1}')
    local dropped
    dropped=$(grep -oE "^[0-9]+ packets dropped by kernel" "$WORK/tcpdump-$1.err" | awk '{print $1}')
    [ -n "$CAP_RECEIVED" ] || fail "($1) no statistics from tcpdump"
    [ "$dropped" = 0 ] || fail "($1) tcpdump's ring dropped $dropped frames"
}

# case_local LABEL PROGRAM MODE WANT_RX WANT_DROPPED [vnetd args]: drop,
# pass and generic, counted on TAP itself.
case_local() {
    local label=$1 program=$2 want_mode=$3 want_rx=$4 want_dropped=$5
    shift 5
    echo "== ($label) $N frames -> vnetd -> $TAP running $program"
    start_labelled_vnetd "$label" --tap-xdp "$BPF/$program" "$@"
    start_capture "$label"
    snapshot
    send "$label"
    stop_capture "$label"
    local rx dropped
    rx=$(($(link_stat "$NS" "$TAP" rx_packets) - RX0))
    dropped=$(($(link_stat "$NS" "$TAP" rx_dropped) - DROP0))
    stop_vnetd "$label" "$want_mode"
    local vtap_tx vtap_drops
    read -r vtap_tx vtap_drops < <(vnetd_stats "$STATS" "$TAP.tx.packets" "$TAP.tx.drops")
    check_equal "$label" "sent=$N" "vnetd_tap_tx=$vtap_tx"
    check_zero "$label" "vnetd_tap_tx_drops=$vtap_drops"
    check_equal "$label" "expected_rx_packets=$want_rx" "kernel_tap_rx_packets_delta=$rx" \
        "tcpdump_received=$CAP_RECEIVED"
    check_equal "$label" "expected_rx_dropped=$want_dropped" "kernel_tap_rx_dropped_delta=$dropped"
}

# case_redirect: TAP's program redirects to RTAP; tap_probe reads RTAP.
case_redirect() {
    local label=redirect
    echo "== ($label) $N frames -> vnetd -> $TAP -> XDP_REDIRECT -> $RTAP, read by tap_probe"
    mkfifo "$WORK/probe.in"
    # RTAP's queue holds every frame, so the count does not depend on
    # how fast tap_probe reads.
    bg_start --in "$WORK/probe.in" --out "$WORK/probe.out" --err "$WORK/probe.err" \
        ip netns exec "$NS" "$PROBE" serve --name "$RTAP" --txqueuelen $((N + 1000))
    local probe_pid=$BG_PID
    exec 7>"$WORK/probe.in"
    wait_for 10 "($label) tap_probe did not open $RTAP" log_has "$WORK/probe.out" "^ready"
    local rtap_tx0
    rtap_tx0=$(link_stat "$NS" "$RTAP" tx_packets)
    start_labelled_vnetd "$label" --tap-xdp "$BPF/xdp_redirect.bpf.o:xdp" --tap-xdp-redirect "$RTAP"
    grep -q "redirect to $RTAP" "$LOG" || fail "($label) vnetd did not log the redirect"
    snapshot
    send "$label"
    # pktgen's frames are not tap_probe's test frames: they count as "other".
    echo "read 1 3000" >&7
    wait_for 20 "($label) tap_probe did not answer" log_has "$WORK/probe.out" "^ok read="
    local line read_other rx dropped rtap_tx
    rx=$(($(link_stat "$NS" "$TAP" rx_packets) - RX0))
    dropped=$(($(link_stat "$NS" "$TAP" rx_dropped) - DROP0))
    rtap_tx=$(($(link_stat "$NS" "$RTAP" tx_packets) - rtap_tx0))
    echo "quit" >&7
    exec 7>&-
    stop_pid "$probe_pid" TERM
    line=$(grep "^ok read=" "$WORK/probe.out")
    read_other=$(grep -oE "other=[0-9]+" <<<"$line" | cut -d= -f2)
    stop_vnetd "$label" native
    echo "($label) $TAP rx_packets +$rx rx_dropped +$dropped; $RTAP tx_packets +$rtap_tx"
    # tun counts a redirected frame in the source's rx_packets, and in the
    # target's tx_packets when its reader takes it.
    check_equal "$label" "sent=$N" "read_on_${RTAP}=$read_other" \
        "kernel_tap_rx_packets_delta=$rx" "kernel_rtap_tx_packets_delta=$rtap_tx"
    check_zero "$label" "kernel_tap_rx_dropped_delta=$dropped"
}

# case_bad LABEL MESSAGE VNETD-ARGS...: vnetd exits 1 with MESSAGE last.
case_bad() {
    local label=$1 want=$2
    shift 2
    echo "== ($label) vnetd $*"
    local badtap
    badtap=$(link_name vxb)
    ip netns exec "$NS" timeout 20 "$VNETD" --socket-path "$WORK/$label.sock" --tap "$badtap" \
        --control-socket "$WORK/vnetd-$label.ctl" "$@" >"$WORK/vnetd-$label.log" 2>&1
    local rc=$?
    local last
    last=$(tail -n 1 "$WORK/vnetd-$label.log")
    echo "($label) exit $rc: $last"
    [ "$rc" = 1 ] || fail "($label) vnetd exited $rc, expected 1"
    [ "$last" = "vnetd: ${want//@TAP@/$badtap}" ] ||
        fail "($label) message: '$last', expected 'vnetd: ${want//@TAP@/$badtap}'"
    ip -n "$NS" link show "$badtap" >/dev/null 2>&1 &&
        fail "($label) vnetd left its tap $badtap behind"
    return 0
}

echo "== frames $N, programs in $BPF"
case_local drop xdp_drop.bpf.o native 0 "$N"
case_local pass xdp_pass.bpf.o native "$N" 0
case_local generic xdp_pass.bpf.o generic "$N" 0 --tap-xdp-mode generic
case_redirect

case_bad missing-file \
    "tap '@TAP@': XDP program '$WORK/none.bpf.o': open failed: No such file or directory (ENOENT); check the path (a relative one is taken from vnetd's working directory)" \
    --tap-xdp "$WORK/none.bpf.o"
case_bad missing-section \
    "tap '@TAP@': XDP program '$BPF/xdp_drop.bpf.o' has no program in section (or named) 'xdp/none' (it has xdp_drop in 'xdp')" \
    --tap-xdp "$BPF/xdp_drop.bpf.o:xdp/none"
case_bad redirect-nowhere \
    "tap '@TAP@': xdp_redirect 'vxn$ID': no such network device in vnetd's network namespace" \
    --tap-xdp "$BPF/xdp_redirect.bpf.o" --tap-xdp-redirect "vxn$ID"

pass
