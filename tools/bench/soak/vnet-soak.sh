#!/bin/bash
# vnet-soak: vnetd under churn for an hour (issue 10, "Beyond the tests").
# Not a CI test: it runs for SOAK_SECONDS (default 3600) and writes a CSV, a
# plot and a verdict, for docs/BENCHMARKS.md.
#
# What runs, all on one vnetd switch `soak` made at run time:
#   - traffic throughout: a steady vnet-pktgen --tx floods broadcast frames
#     from 64 source MACs (learning and aging churn) at SOAK_RATE pps; a
#     steady vnet-pktgen --rx counts them;
#   - VMs connecting and disconnecting: SOAK_SLOTS churn slots, one step
#     every SOAK_PERIOD seconds, round robin; a slot goes through
#       port add -> a front end connects (an --rx vnet-pktgen, taking the
#       floods) -> it is SIGKILLed (a guest killed mid-burst) -> a new one
#       connects -> it stops with SIGTERM -> port del
#     so every step is one of the things a host does to vnetd all day;
#   - a tap port added and removed every 4th step, its netdev moved into a
#     namespace the soak made (the fd keeps working there);
#   - every SOAK_SAMPLE seconds (default 60): vnetd's RSS, open fds, threads,
#     port count, the steps done, what the steady receiver got.
#
# At the end vnetd must exit 0; the verdict compares the baseline (the
# steady pair alone, after a warm-up) with the last sample, taken after every
# churn port was removed again (the same shape): RSS growth, fds, threads.
#
# Usage: tools/bench/soak/vnet-soak.sh BUILD_DIR OUT_DIR   (as root)
#   SOAK_SECONDS (3600) SOAK_PERIOD (3) SOAK_SAMPLE (60) SOAK_SLOTS (4)
#   SOAK_RATE (2000: 500 us gaps, longer than the adaptive spin ceiling, so vnetd
#   sleeps between frames and the soak does not take a CPU for an hour)
# Writes OUT_DIR/soak.csv (every sample), OUT_DIR/summary.csv (baseline,
# end and maximum of each measure), OUT_DIR/soak.svg (gnuplot),
# OUT_DIR/soak.txt (the verdict and an ASCII plot), OUT_DIR/run.json (what
# ran: ../lib.sh), and keeps the logs in OUT_DIR.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
bench_init vnet-soak "$@"
SECONDS_TOTAL=${SOAK_SECONDS:-3600}
PERIOD=${SOAK_PERIOD:-3}
SAMPLE=${SOAK_SAMPLE:-60}
SLOTS=${SOAK_SLOTS:-4}
RATE=${SOAK_RATE:-2000}

need_built "$PKTGEN"
bench_need_command gnuplot "for the plot: apt install gnuplot-nox"

bench_work
NS=$(ns_name soak)
netns_new "$NS"
fail_log "$OUT/vnetd.log" 30

bench_vnetd "$OUT/vnetd.log"
ctl switch add soak >/dev/null || fail "switch add soak"

# The steady pair: the receiver first, so nothing is sent before it listens.
for p in steady-rx steady-tx; do
    ctl port add vhost-user "$p" --socket-path "$WORK/$p.sock" --switch soak >/dev/null ||
        fail "port add $p"
done
bg_start --out "$OUT/steady-rx.out" --err "$OUT/steady-rx.err" \
    "$PKTGEN" --socket-path "$WORK/steady-rx.sock" --rx --duration 0 --connect-timeout 10
RX_PID=$BG_PID
bg_start --out "$OUT/steady-tx.out" --err "$OUT/steady-tx.err" \
    "$PKTGEN" --socket-path "$WORK/steady-tx.sock" --tx --duration 0 --rate "$RATE" \
    --size-range 64-1500 --src-mac-count 64 --dst-mac ff:ff:ff:ff:ff:ff --connect-timeout 10
TX_PID=$BG_PID

# ---- the churn ---------------------------------------------------------------------

declare -A SLOT_STATE=() SLOT_PID=()
for ((s = 0; s < SLOTS; s++)); do SLOT_STATE[$s]=absent; done
STEPS=0
TAP_ON=0
TAP=$(link_name soak t)

connect_slot() {
    bg_start --out /dev/null --err "$OUT/churn-$1.err" \
        "$PKTGEN" --socket-path "$WORK/churn-$1.sock" --rx --duration 0 --connect-timeout 10
    SLOT_PID[$1]=$BG_PID
}

# step_slot S: move slot S one state on (see the header).
step_slot() {
    local s=$1 name="churn-$1"
    case ${SLOT_STATE[$s]} in
        absent)
            ctl port add vhost-user "$name" --socket-path "$WORK/$name.sock" --switch soak \
                >/dev/null || fail "port add $name"
            connect_slot "$s"
            SLOT_STATE[$s]=first ;;
        first)
            stop_pid "${SLOT_PID[$s]}" KILL 5 || true
            connect_slot "$s"
            SLOT_STATE[$s]=second ;;
        second)
            stop_pid "${SLOT_PID[$s]}" TERM 10 || true
            ctl port del "$name" >/dev/null || fail "port del $name"
            SLOT_STATE[$s]=absent ;;
    esac
}

step_tap() {
    if [ "$TAP_ON" = 0 ]; then
        ctl port add tap soak-tap --tap "$TAP" --switch soak >/dev/null || fail "port add tap"
        ip link set dev "$TAP" netns "$NS" || fail "moving $TAP into $NS"
        ip -n "$NS" link set dev "$TAP" up || fail "$TAP up in $NS"
        TAP_ON=1
    else
        ctl port del soak-tap >/dev/null || fail "port del soak-tap"
        TAP_ON=0
    fi
}

steady_received() {
    ctl --json stats | python3 -c '
import json, sys
ports = {p["name"]: p for p in json.load(sys.stdin)["ports"]}
print(sum(q["tx"]["packets"] for q in ports["steady-rx"]["queues"]))' 2>/dev/null || echo 0
}

sample() {
    local t=$1 rss threads fds ports
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$VNETD_PID/status")
    threads=$(awk '/^Threads:/ {print $2}' "/proc/$VNETD_PID/status")
    fds=$(fd_count "$VNETD_PID")
    ports=$(ctl --json port list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
    echo "$t,$rss,$fds,$threads,$ports,$STEPS,$(steady_received)" >>"$OUT/soak.csv"
}

# bash reports every SIGKILLed front end ("Killed") on stderr when it reaps
# it; that is the soak working, not news: the shell's stderr goes to a file.
exec 3>&2 2>>"$OUT/soak-shell.err"
echo "seconds,rss_kib,fds,threads,ports,steps,steady_rx_frames" >"$OUT/soak.csv"
START=$(date +%s)
sample 0
# The baseline: the steady pair only, after its buffers and the MAC table
# have settled; the last sample is taken in the same shape.
WARM=$((SAMPLE < 20 ? SAMPLE : 20))
sleep "$WARM"
sample "$WARM"
NEXT_SAMPLE=$((WARM + SAMPLE))
NEXT_STEP=$WARM
while true; do
    now=$(($(date +%s) - START))
    [ "$now" -ge "$SECONDS_TOTAL" ] && break
    running "$VNETD_PID" || fail "vnetd died after $now s"
    if [ "$now" -ge "$NEXT_SAMPLE" ]; then
        sample "$now"
        NEXT_SAMPLE=$((NEXT_SAMPLE + SAMPLE))
    fi
    if [ "$now" -ge "$NEXT_STEP" ]; then
        step_slot $((STEPS % SLOTS))
        if [ $((STEPS % 4)) = 3 ]; then step_tap; fi
        STEPS=$((STEPS + 1))
        NEXT_STEP=$((NEXT_STEP + PERIOD))
    fi
    sleep 0.2
done

# Back to the starting shape (the steady pair only) before the last sample,
# so first and last compare like with like.
for ((s = 0; s < SLOTS; s++)); do
    while [ "${SLOT_STATE[$s]}" != absent ]; do step_slot "$s"; done
done
[ "$TAP_ON" = 1 ] && step_tap
sleep 2
sample "$(($(date +%s) - START))"
running "$RX_PID" || fail "the steady receiver died"
running "$TX_PID" || fail "the steady sender died"
stop_pid "$TX_PID" TERM 10 || true
stop_pid "$RX_PID" TERM 10 || true
stop_pid "$VNETD_PID" TERM 20 || fail "vnetd exited with status $?"
exec 2>&3 3>&-

# ---- the verdict and the plot --------------------------------------------------------

python3 - "$OUT/soak.csv" "$SECONDS_TOTAL" "$PERIOD" "$OUT/summary.csv" <<'EOF' | tee "$OUT/soak.txt"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
first = rows[1]  # the baseline after the warm-up
last = rows[-1]
def n(r, k): return int(r[k])
summary = csv.writer(open(sys.argv[4], "w", newline=""))
summary.writerow(["measure", "baseline", "end", "max"])
for k in ("rss_kib", "fds", "threads", "ports", "steps", "steady_rx_frames"):
    summary.writerow([k, n(first, k), n(last, k), max(n(r, k) for r in rows)])
print(f"soak: {sys.argv[2]} s, one step every {sys.argv[3]} s, {n(last, 'steps')} steps, "
      f"{len(rows)} samples")
print(f"rss: {n(first, 'rss_kib')} KiB at the baseline, {n(last, 'rss_kib')} KiB at the end, "
      f"max {max(n(r, 'rss_kib') for r in rows)} KiB")
print(f"fds: {n(first, 'fds')} -> {n(last, 'fds')} (ports {n(first, 'ports')} -> {n(last, 'ports')})")
print(f"threads: {n(first, 'threads')} -> {n(last, 'threads')}")
print(f"steady receiver: {n(last, 'steady_rx_frames')} frames")
EOF
gnuplot <<GP
set datafile separator ","
set terminal svg size 900,500 dynamic
set output "$OUT/soak.svg"
set title "vnetd soak: RSS, fds, threads under churn (one step every ${PERIOD} s)"
set xlabel "minutes"
set ylabel "RSS (MiB)"
set y2label "fds, threads, ports"
set y2tics
set key outside bottom center horizontal
plot "$OUT/soak.csv" every ::1 using (\$1/60):(\$2/1024) with linespoints title "RSS MiB", \
     "" every ::1 using (\$1/60):3 axes x1y2 with linespoints title "fds", \
     "" every ::1 using (\$1/60):4 axes x1y2 with linespoints title "threads", \
     "" every ::1 using (\$1/60):5 axes x1y2 with steps title "ports"
set terminal dumb size 100,25
set output "$OUT/soak-ascii.txt"
set title "RSS (MiB) and fds over minutes"
plot "$OUT/soak.csv" every ::1 using (\$1/60):(\$2/1024) with lines title "RSS MiB", \
     "" every ::1 using (\$1/60):3 axes x1y2 with lines title "fds"
GP
cat "$OUT/soak-ascii.txt" >>"$OUT/soak.txt"
bench_done "$OUT/summary.csv" "$OUT/soak.txt" "$OUT/soak.csv" "$OUT/soak.svg"
pass "soak done: $OUT/soak.csv, $OUT/soak.svg, $OUT/soak.txt"
