#!/bin/bash
# vnet-underlay-limit: what the kernel charges per VXLAN datagram, sent and
# received the ways a user-space VXLAN datapath could, against the kernel's
# own vxlan device carrying the same frames (issue 30; docs/BENCHMARKS.md,
# "Two hosts over VXLAN"). No vnetd runs: this is the ceiling a VXLAN
# uplink over a UDP socket would work under. Not a CI test.
#
# Two network namespaces joined by a veth pair (the underlay), the sender
# (udp_batch_limit, tools/bench/peers/) on CPU 0, the receiver on CPU 1.
# Rows, for 64 B and 1414 B inner frames (VXLAN datagrams of 72 and 1422
# bytes), BENCH_REPEAT times each, interleaved:
#   one    one datagram per send() and per recv()
#   mmsg   64 per sendmmsg() and per recvmmsg()
#   gso    64 per sendmsg() with UDP_SEGMENT (fewer where 64 would pass
#          65,000 bytes), received coalesced with UDP_GRO
#   kernel the inner frame's UDP sent one per send() through a vxlan
#          device in each namespace (the kernel's VXLAN path, as vnetd's
#          uplink uses it today), received one per recv()
# Per row: datagrams received per second, and CPU per datagram: the busy
# time of both CPUs (/proc/stat) over the row divided by what was received.
# The ratio that matters is each row's CPU per datagram against `kernel`.
# Usage: tools/bench/vxlan/vnet-underlay-limit.sh BUILD_DIR OUT_DIR   (as root)
#   BENCH_SECONDS (3) BENCH_REPEAT (3)
# Writes OUT_DIR/underlay.csv (every sample), OUT_DIR/summary.csv (medians
# and ratios) and OUT_DIR/run.json (what ran: ../lib.sh).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
bench_init vnet-underlay-limit "$@"
S=${BENCH_SECONDS:-3}
REPEAT=${BENCH_REPEAT:-3}
LIMIT="$BUILD_DIR/tools/bench/udp_batch_limit"
need_built "$LIMIT"
bench_work

TX=$(ns_name ulA)
RX=$(ns_name ulB)
netns_new "$TX"
netns_new "$RX"
ip link add ulA netns "$TX" type veth peer name ulB netns "$RX" || fail "veth"
ip -n "$TX" addr add 10.230.0.1/24 dev ulA
ip -n "$RX" addr add 10.230.0.2/24 dev ulB
ip -n "$TX" link set ulA up
ip -n "$RX" link set ulB up
# Static neighbours: nothing but the measured datagrams crosses.
ip -n "$TX" neigh add 10.230.0.2 lladdr "$(ip -n "$RX" -br link show ulB | awk '{print $3}')" dev ulA
ip -n "$RX" neigh add 10.230.0.1 lladdr "$(ip -n "$TX" -br link show ulA | awk '{print $3}')" dev ulB
# The kernel's row: vxlan devices over the same veth, inner 10.231.0.0/24.
ip -n "$TX" link add vxul type vxlan id 100 local 10.230.0.1 remote 10.230.0.2 dstport 4789 dev ulA
ip -n "$RX" link add vxul type vxlan id 100 local 10.230.0.2 remote 10.230.0.1 dstport 4789 dev ulB
ip -n "$TX" addr add 10.231.0.1/24 dev vxul
ip -n "$RX" addr add 10.231.0.2/24 dev vxul
ip -n "$TX" link set vxul up
ip -n "$RX" link set vxul up
ip -n "$TX" neigh add 10.231.0.2 lladdr "$(ip -n "$RX" -br link show vxul | awk '{print $3}')" dev vxul
ip -n "$RX" neigh add 10.231.0.1 lladdr "$(ip -n "$TX" -br link show vxul | awk '{print $3}')" dev vxul
ip netns exec "$TX" bridge fdb append 00:00:00:00:00:00 dev vxul dst 10.230.0.2 2>/dev/null || true

cpu_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }
HZ=$(getconf CLK_TCK)

CSV="$OUT/underlay.csv"
echo "row,frame_bytes,repeat,sent,received,seconds,rx_calls,cpu_ns_per_datagram" >"$CSV"

# one_row NAME HOW FRAME REPEAT
one_row() {
    local name=$1 how=$2 frame=$3 r=$4 dst=10.230.0.2 port=4790 bytes=$(($3 + 8))
    if [ "$name" = kernel ]; then
        dst=10.231.0.2 port=5790 bytes=$(($3 - 42))
    fi
    ip netns exec "$RX" taskset -c 1 "$LIMIT" recv "$how" "$dst" "$port" "$bytes" "$S" \
        >"$WORK/recv.out" 2>&1 &
    local receiver=$!
    sleep 0.3
    local b0 b1
    b0=$(cpu_busy)
    ip netns exec "$TX" taskset -c 0 "$LIMIT" send "$how" "$dst" "$port" "$bytes" "$S" \
        >"$WORK/send.out" 2>&1 || fail "sender: $(cat "$WORK/send.out")"
    wait "$receiver" || fail "receiver: $(cat "$WORK/recv.out")"
    b1=$(cpu_busy)
    local sent got secs calls
    sent=$(awk '{print $6}' "$WORK/send.out")
    read -r got secs calls < <(awk '{print $6, $8, $10}' "$WORK/recv.out")
    [ "${got:-0}" -gt 0 ] || fail "$name $frame B: nothing received ($(cat "$WORK/recv.out"))"
    # The sender's whole run against what arrived: CPU per datagram delivered.
    local ns
    ns=$(((b1 - b0) * 1000000000 / HZ / got))
    echo "$name,$frame,$r,$sent,$got,$secs,$calls,$ns" >>"$CSV"
    printf '%-6s %4s B  #%s: %9s received/s, %6s ns CPU each\n' "$name" "$frame" "$r" \
        "$(awk -v n="$got" -v s="$secs" 'BEGIN{printf "%.0f", n/s}')" "$ns"
}

for frame in 64 1414; do
    for r in $(seq 1 "$REPEAT"); do
        one_row one one "$frame" "$r"
        one_row mmsg mmsg "$frame" "$r"
        one_row gso gso "$frame" "$r"
        one_row kernel one "$frame" "$r"
    done
done

python3 - "$CSV" "$OUT/summary.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
out = csv.writer(open(sys.argv[2], "w"))
out.writerow(["row", "frame_bytes", "datagrams_per_s", "cpu_ns_per_datagram",
              "cpu_vs_kernel", "rate_vs_kernel"])
for frame in sorted({r["frame_bytes"] for r in rows}, key=int):
    med = {}
    for name in ("one", "mmsg", "gso", "kernel"):
        sel = [r for r in rows if r["row"] == name and r["frame_bytes"] == frame]
        rate = statistics.median(int(r["received"]) / float(r["seconds"]) for r in sel)
        cpu = statistics.median(int(r["cpu_ns_per_datagram"]) for r in sel)
        med[name] = (rate, cpu)
    for name, (rate, cpu) in med.items():
        k_rate, k_cpu = med["kernel"]
        out.writerow([name, frame, round(rate), cpu, round(cpu / k_cpu, 3), round(rate / k_rate, 2)])
        print(f"{name:6} {frame:>5} B: {rate / 1e3:9.1f} kpps, {cpu:6} ns CPU a datagram, "
              f"{cpu / k_cpu:.3f}x the kernel's CPU, {rate / k_rate:.2f}x its rate")
PY
bench_done "$OUT/summary.csv" "$OUT/underlay.csv"
