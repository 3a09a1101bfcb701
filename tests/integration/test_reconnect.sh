#!/bin/bash
# A guest that dies mid-traffic and comes back: vnetd must stay up, give back
# everything the dead connection held, and forward again for the next one,
# in both socket roles.
#
#   (a) vnetd server (its tap in a netns with IPv6 off, so every frame the
#       tap counts is the guest's). Three times: vnet-pktgen --tx (64 B,
#       unpaced) connects, the tap's rx_packets grows, pktgen is SIGKILLed
#       mid-traffic. After each kill: vnetd is alive (same PID), logs the
#       closed connection, its fd count and thread count return to the
#       baseline taken before the first guest, no guest memory
#       (memfd:vnet-driver-memory) is still mapped, and nothing more reaches
#       the tap. Then a fourth guest sends exactly M frames (tap rx_packets
#       grows by exactly M) and a fifth receives K frames injected from the
#       netns (its RX ring starts from scratch too: rx-verified == K, no
#       loss). At SIGTERM, over the whole run:
#         vnetd vm0 rx == vnetd tap tx == kernel tap rx_packets, no drops
#         vnetd tap rx == vnetd vm0 tx == kernel tap tx_packets == K
#   (b) vnetd --client, vnet-pktgen --server. vnetd starts first and retries;
#       the baseline is taken while it has nothing to connect to. Three
#       times: pktgen listens, vnetd connects within its backoff cap
#       (5 s; asserted: link up <= 6 s after pktgen started listening),
#       traffic flows, pktgen is SIGKILLed, vnetd gives everything back as
#       in (a); the listener stays away 0.5 s, 3 s, then 8 s (long enough
#       for the backoff to reach its cap). A final pktgen sends exactly M
#       frames; the totals agree as in (a).
#
# Usage: test_reconnect.sh BUILD_DIR   (as root; exit 77 = skipped)
#   VNET_TEST_FRAMES  M, the exact runs (default 20000)
#   VNET_TEST_VNETD_ARGS  more vnetd args
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
FRAMES="$HERE/lib/pktgen_frames.py"
M=${VNET_TEST_FRAMES:-20000}
K=2000
CYCLES=3
read -r -a VNETD_EXTRA <<<"${VNET_TEST_VNETD_ARGS:-}"

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap)"
need_commands ip python3 timeout
need_built "$VNETD" "$PKTGEN"

work_dir vnetd-reconnect

threads_of() { awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null; }
guest_maps_of() { grep -c "vnet-driver-memory" "/proc/$1/maps" 2>/dev/null; }
resources_of() { echo "fds $(fd_count "$1") threads $(threads_of "$1") guest-mappings $(guest_maps_of "$1")"; }

# start_labelled_vnetd LABEL ARGS...: vnetd in NS (its tap is born there), VNETD_PID.
start_labelled_vnetd() {
    local label=$1
    shift
    start_vnetd "$WORK/vnetd-$label.log" --netns "$NS" --tap "$TAP" --stats-file "$STATS" \
        --control-socket "$WORK/vnetd-$label.ctl" "${VNETD_EXTRA[@]}" "$@"
}

# start_pktgen LOGNAME ARGS...: PKTGEN_PID; stdout in LOGNAME.out, stderr in LOGNAME.err.
start_pktgen() {
    local name=$1
    shift
    bg_start --out "$WORK/$name.out" --err "$WORK/$name.err" \
        "$PKTGEN" --socket-path "$SOCK" --stats-interval 0 "$@"
    PKTGEN_PID=$BG_PID
}

# wait_tap_growth LABEL FROM AT_LEAST: tap rx_packets passes FROM + AT_LEAST within 20 s.
wait_tap_growth() {
    wait_until 20 tap_grew_or_vnetd_died "$2" "$3"
    local now
    now=$(link_stat "$NS" "$TAP" rx_packets)
    [ "$now" -ge $(($2 + $3)) ] 2>/dev/null && return 0
    running "$VNETD_PID" || fail "($1) vnetd died"
    fail "($1) the tap's rx_packets stayed at $now (from $2): traffic did not resume"
}
# tap_grew_or_vnetd_died FROM AT_LEAST: tap rx_packets >= FROM + AT_LEAST,
# or no vnetd any more (no use waiting then).
tap_grew_or_vnetd_died() {
    running "$VNETD_PID" || return 0
    [ "$(link_stat "$NS" "$TAP" rx_packets)" -ge $(($1 + $2)) ]
}

# after_kill LABEL CLOSED_COUNT: vnetd survived the guest's death and let go
# of everything that guest had (fds, threads, its memory mappings).
after_kill() {
    local label=$1 closed=$2 now
    wait_for 10 "($label) vnetd did not notice the guest's death" \
        log_count "$WORK/vnetd-$label.log" "connection closed" "$closed"
    running "$VNETD_PID" || fail "($label) vnetd (pid $VNETD_PID) died with the guest"
    wait_until 5 at_baseline
    now=$RESOURCES_NOW
    [ "$now" = "$BASELINE" ] || fail "($label) vnetd holds $now after the guest died, baseline $BASELINE"
    # Nothing of the dead guest's ring reaches the tap any more.
    local a b
    a=$(link_stat "$NS" "$TAP" rx_packets)
    sleep 0.3
    b=$(link_stat "$NS" "$TAP" rx_packets)
    [ "$a" = "$b" ] || fail "($label) the tap still receives ($a -> $b) with the guest gone"
    echo "($label) guest $closed gone: vnetd pid $VNETD_PID alive, $now, tap rx_packets $b"
}

# at_baseline: vnetd's resources (kept in RESOURCES_NOW) equal BASELINE.
at_baseline() {
    RESOURCES_NOW=$(resources_of "$VNETD_PID")
    [ "$RESOURCES_NOW" = "$BASELINE" ]
}

# exact_run LABEL ARGS...: one pktgen --tx --count M run; the tap's
# rx_packets must grow by exactly M.
exact_run() {
    local label=$1 name=$2
    shift 2
    local before after
    before=$(link_stat "$NS" "$TAP" rx_packets)
    start_pktgen "$name" --tx --count "$M" --size 64 "$@"
    wait_until 60 exited "$PKTGEN_PID"
    stop_pid "$PKTGEN_PID" INT || fail "($label) the exact run's pktgen failed"
    after=$(link_stat "$NS" "$TAP" rx_packets)
    check_equal "$label" "sent=$M" "pktgen_tx-packets=$(pktgen_value "$WORK/$name.out" tx-packets)" \
        "kernel_tap_rx_packets_growth=$((after - before))"
}

# final_totals LABEL EXPECT_INJECTED: vnetd's final stats against the tap.
final_totals() {
    local label=$1 injected=$2
    local tap_rx tap_rx_dropped tap_tx tap_tx_dropped
    tap_rx=$(link_stat "$NS" "$TAP" rx_packets)
    tap_rx_dropped=$(link_stat "$NS" "$TAP" rx_dropped)
    tap_tx=$(link_stat "$NS" "$TAP" tx_packets)
    tap_tx_dropped=$(link_stat "$NS" "$TAP" tx_dropped)
    stop_pid "$VNETD_PID" TERM || fail "($label) vnetd exited with status $? on SIGTERM"
    local vm_rx vm_rx_drops vtap_tx vtap_tx_drops vtap_rx vtap_rx_drops vm_tx vm_tx_drops
    read -r vm_rx vm_rx_drops vtap_tx vtap_tx_drops vtap_rx vtap_rx_drops vm_tx vm_tx_drops < <(
        vnetd_stats "$STATS" vm0.rx.packets vm0.rx.drops "$TAP.tx.packets" "$TAP.tx.drops" \
            "$TAP.rx.packets" "$TAP.rx.drops" vm0.tx.packets vm0.tx.drops)
    check_equal "$label" "vnetd_vm0_rx=$vm_rx" "vnetd_tap_tx=$vtap_tx" "kernel_tap_rx_packets=$tap_rx"
    check_equal "$label" "injected=$injected" "kernel_tap_tx_packets=$tap_tx" \
        "vnetd_tap_rx=$vtap_rx" "vnetd_vm0_tx=$vm_tx"
    check_zero "$label" "vnetd_vm0_rx_drops=$vm_rx_drops" "vnetd_tap_tx_drops=$vtap_tx_drops" \
        "vnetd_tap_rx_drops=$vtap_rx_drops" "vnetd_vm0_tx_drops=$vm_tx_drops" \
        "kernel_tap_rx_dropped=$tap_rx_dropped" "kernel_tap_tx_dropped=$tap_tx_dropped"
}

# ---------------------------------------------------------------- (a)
echo "== (a) vnetd server; vnet-pktgen --tx SIGKILLed mid-traffic $CYCLES times"
NS=$(ns_name vrc-a)
TAP=$(link_name vrc a)
SOCK="$WORK/a.sock"
STATS="$WORK/vnetd-a.json"
netns_new "$NS"
start_labelled_vnetd a --socket-path "$SOCK"
wait_for 10 "(a) vnetd did not listen" log_has "$WORK/vnetd-a.log" "listening on"
ip -n "$NS" link set "$TAP" up txqueuelen 10000 || fail "(a) $TAP up"
BASELINE=$(resources_of "$VNETD_PID")
echo "(a) vnetd pid $VNETD_PID baseline: $BASELINE"

for ((cycle = 1; cycle <= CYCLES; cycle++)); do
    before=$(link_stat "$NS" "$TAP" rx_packets)
    start_pktgen "pktgen-a$cycle" --tx --size 64
    wait_for 15 "(a) guest $cycle did not come up" log_has "$WORK/pktgen-a$cycle.err" "link up"
    wait_tap_growth a "$before" 20000
    stop_pid "$PKTGEN_PID" KILL
    after_kill a "$cycle"
done

exact_run a pktgen-a-exact
echo "(a) a guest receives $K frames injected from the netns"
start_pktgen pktgen-a-rx --rx --count "$K" --duration 60
wait_for 15 "(a) the receiving guest did not come up" log_has "$WORK/pktgen-a-rx.err" "link up"
sent=$(ip netns exec "$NS" timeout 60 python3 "$FRAMES" inject --ifname "$TAP" --count "$K" \
    --size 64 --dst-mac 02:00:00:00:00:01 --src-mac 02:00:00:00:00:02 2>"$WORK/inject-a.log") ||
    fail "(a) the injector failed"
wait_until 30 exited "$PKTGEN_PID"
stop_pid "$PKTGEN_PID" INT || fail "(a) pktgen --rx failed"
OUT="$WORK/pktgen-a-rx.out"
check_equal a "injected=$(awk '{print $2}' <<<"$sent")" "pktgen_rx-packets=$(pktgen_value "$OUT" rx-packets)" \
    "pktgen_rx-verified=$(pktgen_value "$OUT" rx-verified)"
check_zero a "pktgen_rx-bad=$(pktgen_value "$OUT" rx-bad)" "pktgen_rx-lost=$(pktgen_value "$OUT" rx-lost)"
after_kill a $((CYCLES + 2))
final_totals a "$K"

# ---------------------------------------------------------------- (b)
echo "== (b) vnetd --client; vnet-pktgen --server SIGKILLed and restarted on the same path $CYCLES times"
NS=$(ns_name vrc-b)
TAP=$(link_name vrc b)
SOCK="$WORK/b.sock"
STATS="$WORK/vnetd-b.json"
netns_new "$NS"
start_labelled_vnetd b --socket-path "$SOCK" --client
wait_for 10 "(b) vnetd did not try to connect" log_has "$WORK/vnetd-b.log" "connect failed"
ip -n "$NS" link set "$TAP" up || fail "(b) $TAP up"
# A reconnect attempt holds a socket for a moment: take two equal samples.
for ((i = 0; i < 20; i++)); do
    sleep 0.2
    BASELINE=$(resources_of "$VNETD_PID")
    [ "$BASELINE" = "$(resources_of "$VNETD_PID")" ] && break
done
echo "(b) vnetd pid $VNETD_PID baseline (not connected): $BASELINE"
DOWNTIME=(0 0.5 3 8)

# listen_and_time NAME ARGS...: pktgen --server; sets RECONNECT_MS, from
# the moment its socket exists (or, if vnetd was quicker than this loop,
# from pktgen's start) to "link up".
listen_and_time() {
    local name=$1
    shift
    local t0 t_listen="" t1 i
    t0=$(date +%s%N)
    start_pktgen "$name" --server --connect-timeout 30 "$@"
    for ((i = 0; i < 400; i++)); do
        [ -z "$t_listen" ] && [ -S "$SOCK" ] && t_listen=$(date +%s%N)
        grep -q "link up" "$WORK/$name.err" 2>/dev/null && break
        running "$PKTGEN_PID" || fail "(b) $name exited before vnetd connected"
        sleep 0.05
    done
    t1=$(date +%s%N)
    grep -q "link up" "$WORK/$name.err" || fail "(b) vnetd did not connect to $name within 20 s"
    RECONNECT_MS=$(((t1 - ${t_listen:-$t0}) / 1000000))
    # The cap is 5 s; the rest is the handshake and this loop's 50 ms polls.
    [ "$RECONNECT_MS" -le 6000 ] ||
        fail "(b) vnetd connected $RECONNECT_MS ms after $name listened: its backoff exceeds 5 s"
}

for ((cycle = 1; cycle <= CYCLES; cycle++)); do
    before=$(link_stat "$NS" "$TAP" rx_packets)
    listen_and_time "pktgen-b$cycle" --tx --size 64
    wait_tap_growth b "$before" 20000
    stop_pid "$PKTGEN_PID" KILL
    echo "(b) guest $cycle: vnetd connected after $RECONNECT_MS ms, traffic flowed"
    after_kill b "$cycle"
    sleep "${DOWNTIME[$cycle]}"
done

before=$(link_stat "$NS" "$TAP" rx_packets)
listen_and_time pktgen-b-exact --tx --size 64 --count "$M"
echo "(b) last guest: vnetd connected after $RECONNECT_MS ms (listener was away ${DOWNTIME[$CYCLES]} s)"
wait_until 60 exited "$PKTGEN_PID"
stop_pid "$PKTGEN_PID" INT || fail "(b) the exact run's pktgen failed"
check_equal b "sent=$M" "pktgen_tx-packets=$(pktgen_value "$WORK/pktgen-b-exact.out" tx-packets)" \
    "kernel_tap_rx_packets_growth=$(($(link_stat "$NS" "$TAP" rx_packets) - before))"
after_kill b $((CYCLES + 1))
final_totals b 0

pass
