#!/usr/bin/env bash
# Guest -> tap and guest -> discard, vnetd against DPDK testpmd, in one run.
#
# The same generator feeds both back ends: DPDK testpmd with net_virtio_user
# in txonly mode (a real virtio front end, burst 32). The back ends are
#   vnetd:  vnetd --socket-path S --tap T (or --null), worker pinned to CPU 1
#   DPDK:   testpmd --vdev net_vhost0 --vdev net_tap0 in io forwarding
#           (or net_vhost0 alone in rxonly for the discard case), on CPU 1
# The generator runs on CPU 0. Rates are measured where the packets land:
# the tap's rx_packets + rx_dropped (frames dropped by XDP or by the stack
# still count), or, for the discard case, the generator's accepted TX rate.
# Absolute numbers drift between runs and machines; the ratio is the result.
#
#   tools/bench/guest_to_tap.sh [BUILD_DIR] [--seconds N] [--sizes "64 1500"] [--json FILE]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=$top/build
seconds=5
sizes="64 1500"
json_out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --json) json_out=$2; shift 2 ;;
        *) build=$1; shift ;;
    esac
done
vnetd=$build/apps/vnetd
testpmd=$(command -v dpdk-testpmd)
[ -x "$vnetd" ] || { echo "build vnetd first (ninja -C $build vnetd)"; exit 1; }

# shellcheck source=../../tests/integration/lib/common.sh
. "$top/tests/integration/lib/common.sh"
work_dir vnet-bench
work=$WORK
ns=$(ns_name vnbench)
# IPv6 off: the stack sends nothing of its own through the taps.
netns_new "$ns"

hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ "$(cat $hp)" -lt 256 ]; then echo 512 >"$hp"; fi
gen_mem=(--in-memory --single-file-segments -m 512)
# EAL arguments: the generator on hugepages, the DPDK back end without.
DPDK_MEM=("${gen_mem[@]}")
dpdk_eal gen '0@1,1@0'
gen_eal=("${EAL_ARGS[@]}")
DPDK_MEM=(--no-huge -m 1024)
dpdk_eal be '0@1,1@1'
be_eal=("${EAL_ARGS[@]}")
unset DPDK_MEM

# tap_count NAME: rx_packets + rx_dropped of a tap that lives in $ns
tap_count() {
    ip netns exec "$ns" sh -c "echo \$((\$(cat /sys/class/net/$1/statistics/rx_packets) + \$(cat /sys/class/net/$1/statistics/rx_dropped)))"
}

link_exists() { ip link show "$1" >/dev/null 2>&1; }

# start_generator SOCK SIZE LOG: virtio-user txonly on CPU 0 (main lcore idle on CPU 1)
start_generator() {
    bg_start --log "$3" --stop INT stdbuf -oL "$testpmd" "${gen_eal[@]}" \
        --vdev "net_virtio_user0,path=$1,queues=1,queue_size=1024,mac=02:00:00:00:00:01" -- \
        --nb-cores=1 --forward-mode=txonly --txpkts="$2" --burst=32 --txd=1024 --rxd=1024 \
        --stats-period 1 --eth-peer=0,02:00:00:00:00:02
    gen_pid=$BG_PID
}

# testpmd prints its first periodic stats once forwarding runs: EAL set-up
# (hugepages, the vhost-user handshake) can take seconds and must not count.
wait_for_forwarding() { wait_for 30 "the generator did not start forwarding" log_has "$1" 'Tx-pps'; }

# Mpps of the last whole seconds printed by testpmd's --stats-period (Tx-pps of port 0)
generator_mpps() {
    grep -oE 'Tx-pps: +[0-9]+' "$1" | awk '{print $2}' | tail -n "$seconds" | sort -n |
        awk '{a[NR]=$1} END {if (NR==0) print 0; else printf "%.3f", a[int((NR+1)/2)]/1e6}'
}

# measure_tap NAME: Mpps over $seconds after a 2 s warm-up
measure_tap() {
    # Warm-up: wait until packets really flow (a first hugepage set-up can
    # take seconds), then one more second.
    local start; start=$(tap_count "$1")
    for _ in $(seq 100); do [ $(($(tap_count "$1") - start)) -gt 10000 ] && break; sleep 0.1; done
    sleep 1
    local a b
    a=$(tap_count "$1"); sleep "$seconds"; b=$(tap_count "$1")
    awk -v a="$a" -v b="$b" -v s="$seconds" 'BEGIN {printf "%.3f", (b - a) / s / 1e6}'
}

run_vnetd() {  # SIZE SINK(tap|null) -> Mpps
    local size=$1 sink=$2 sock=$work/vnetd.sock tap=vbt$$
    local log=$work/vnetd-$size-$sink.log
    local args=(--socket-path "$sock" --cpu 1 --log-level warn)
    if [ "$sink" = tap ]; then args+=(--tap "$tap"); else args+=(--null); fi
    bg_start --log "$log" --stop INT "$vnetd" "${args[@]}"
    local vpid=$BG_PID
    wait_for 10 "vnetd did not create $sock" test -S "$sock"
    if [ "$sink" = tap ]; then
        ip link set "$tap" netns "$ns"; ip -n "$ns" link set "$tap" up
    fi
    start_generator "$sock" "$size" "$work/gen-vnetd-$size-$sink.log"
    wait_for_forwarding "$work/gen-vnetd-$size-$sink.log"
    local r
    if [ "$sink" = tap ]; then r=$(measure_tap "$tap"); else sleep $((seconds + 2)); r=$(generator_mpps "$work/gen-vnetd-$size-$sink.log"); fi
    stop_pid "$gen_pid" INT || true; stop_pid "$vpid" INT || true
    echo "$r"
}

run_dpdk() {  # SIZE SINK(tap|null) -> Mpps
    local size=$1 sink=$2 sock=$work/dpdk.sock tap=dbt$$
    local log=$work/dpdk-$size-$sink.log
    local vdevs=(--vdev "net_vhost0,iface=$sock,queues=1") mode=rxonly
    if [ "$sink" = tap ]; then vdevs+=(--vdev "net_tap0,iface=$tap"); mode=io; fi
    bg_start --log "$log" --stop INT stdbuf -oL "$testpmd" "${be_eal[@]}" "${vdevs[@]}" -- \
        --nb-cores=1 --forward-mode="$mode" --burst=32 --txd=1024 --rxd=1024 --stats-period 1 \
        --total-num-mbufs=65536
    local dpid=$BG_PID
    wait_for 10 "testpmd did not create $sock" test -S "$sock"
    if [ "$sink" = tap ]; then
        wait_for 10 "testpmd did not create $tap" link_exists "$tap"
        ip link set "$tap" netns "$ns"; ip -n "$ns" link set "$tap" up
    fi
    start_generator "$sock" "$size" "$work/gen-dpdk-$size-$sink.log"
    wait_for_forwarding "$work/gen-dpdk-$size-$sink.log"
    local r
    if [ "$sink" = tap ]; then r=$(measure_tap "$tap"); else sleep $((seconds + 2)); r=$(generator_mpps "$work/gen-dpdk-$size-$sink.log"); fi
    stop_pid "$gen_pid" INT || true; stop_pid "$dpid" INT || true
    echo "$r"
}

# The ceiling for any user-space tap writer: a tight write() loop of one
# prebuilt frame on CPU 1, into a tap in the same kind of netns.
run_raw_limit() {  # SIZE -> Mpps
    local limit=$build/tools/bench/tap_write_limit
    [ -x "$limit" ] || { echo 0; return; }
    ip netns exec "$ns" "$limit" -d "$seconds" -s "$1" -c 1 -i "rwl$$" 2>&1 |
        grep -oE 'tap_Mpps=[0-9.]+' | cut -d= -f2
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }

printf '%-6s %-5s %11s %11s %11s %11s %11s\n' size sink "vnetd Mpps" "DPDK Mpps" "vnetd/DPDK" \
    "raw limit" "vnetd/raw"
rows=()
for size in $sizes; do
    for sink in tap null; do
        v=$(run_vnetd "$size" "$sink")
        d=$(run_dpdk "$size" "$sink")
        raw=-; vr=-
        if [ "$sink" = tap ]; then raw=$(run_raw_limit "$size"); vr=$(ratio "$v" "$raw"); fi
        printf '%-6s %-5s %11s %11s %11s %11s %11s\n' "$size" "$sink" "$v" "$d" "$(ratio "$v" "$d")" \
            "$raw" "$vr"
        rows+=("{\"size\":$size,\"sink\":\"$sink\",\"vnetd_mpps\":$v,\"dpdk_mpps\":$d,\"raw_limit_mpps\":\"$raw\"}")
    done
done
if [ -n "$json_out" ]; then
    (IFS=,; echo "[${rows[*]}]") >"$json_out"
fi
