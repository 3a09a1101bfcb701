#!/bin/bash
# vnet-vxlan-bench: traffic between two hosts joined by VXLAN, vnetd against
# the kernel in one run (issue 11, docs/BENCHMARKS.md). Not a CI test.
#
# Two network namespaces hA and hB are the hosts, a veth pair between them
# the underlay (static neighbours, no IPv6: it carries only the tunnels).
# Both systems stand up at once, each with its own VNI and UDP port, and the
# rows alternate between them (vnetd, kernel, vnetd, ...), so drift on this
# shared machine hits both:
#   vnetd:  in each host, vnetd with switch s0 and a VXLAN uplink
#           (vxlan100, udp 4789); a "pod" netns with a vnetd tap port of s0
#           (10.210.0.1 on hA, .2 on hB), and a vhost-user port `vm` for
#           the vnet-pktgen rows (hA also a second one, `vm2`, for the
#           one-host row);
#   kernel: in each host, a Linux bridge with a vxlan device (vxlan200,
#           udp 4790) and a veth into a pod netns (10.211.0.1 / .2): the
#           kernel's own way to do the same.
# Rows (SECONDS each, REPEAT times, medians):
#   pod -> pod, both systems, the same iperf3 in the pods:
#     udp64    iperf3 -u -l 22 -b 0 (64-byte frames), delivered kpps
#     udp1400  iperf3 -u -l 1372 -b 0 (1414-byte frames, the tunnel's 1450 MTU), kpps and Gbit/s
#     tcp      iperf3 TCP (GSO frames of up to 64 KB from the pod's stack), Gbit/s
#     udp64_ndr / udp1400_ndr  the same frames at the highest offered rate
#              that loses at most BENCH_NDR_LOSS % (RFC 2544's throughput, with a
#              loss bound: a user-space receiver on a shared machine never
#              loses nothing), delivered kpps: a bisection of BENCH_NDR_STEPS
#              iperf3 -b runs of BENCH_NDR_SECONDS between 0 and what the -b 0
#              row sent. The kernel loses 0.3-1.4 % at every rate here (at
#              its receiver's socket too), so its bisection wanders near a
#              1 % bound: read these rows over several repeats.
#              The -b 0 rows measure what gets through a flood: the kernel's
#              path runs in the sender's own system call, so its sender is
#              slowed to what the path carries, while a tap queues and drops
#              what its reader has not taken, and the flooding sender keeps
#              the CPU the reader needs (85 % of vnetd's 1414 B datagrams
#              were dropped at the pod's tap, 1 % of the kernel's);
#              these rows measure what each path carries when the sender
#              is not the one starving it
#   VM -> VM, vnetd only (vnet-pktgen over vhost-user; the kernel has no
#   vhost-user back end here, vhost-net being absent):
#     vm64 / vm1400  vnet-pktgen --tx unpaced -> --rx on the other host, kpps
#     vmgso          --gso frames of 64 KB (mss 1398) to a GUEST_TSO4 receiver, Gbit/s
#     vmgso_local    the same sender and receiver both on hA's switch (vm -> vm2),
#                    run right after vmgso; vxlan.md and summary.csv give
#                    vmgso / vmgso_local (issue 30's target: >= 0.8)
# Usage: tools/bench/vxlan/vnet-vxlan-bench.sh BUILD_DIR OUT_DIR   (as root)
#   BENCH_SECONDS (5) BENCH_REPEAT (3) BENCH_NDR_SECONDS (2) BENCH_NDR_STEPS (6) BENCH_NDR_LOSS (1)
#   BENCH_VNETD_TOML: appended to both vnetds' config files (run.json keeps
#   it), e.g. $'[datapath]\nmode = "event"' to try a worker mode
#   BENCH_VM_PORT_ARGS (--streaming_stores off): added to each `vnetctl port
#   add vhost-user`. Off because nothing is pinned here: two hosts' workers
#   and up to four guests share 2 CPUs, so a receiving guest runs beside a
#   worker, where plain stores beat streaming ones (docs/BENCHMARKS.md, "GSO,
#   whole frames"; USAGE.md's rule); run.json keeps it
#   BENCH_VXLAN_DATAPATH splice|socket (splice): the datapath of vnetd's
#   uplinks (`--datapath`, docs/USAGE.md "VXLAN uplinks"): the kernel vxlan
#   device spliced to a tap, or vnetd's own UDP socket (run.json keeps it)
#   BENCH_UPLINK_ARGS (none): added to each `vnetctl switch uplink add`,
#   e.g. `--source-ports 1` for the socket datapath's one source port
# Writes OUT_DIR/vxlan.csv (every sample), OUT_DIR/summary.csv and vxlan.md
# (the medians and ratios), OUT_DIR/drops.txt, OUT_DIR/run.json (what ran:
# ../lib.sh) and the logs.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
# Exported before bench_init, so that run.json records the default too.
export BENCH_VXLAN_DATAPATH=${BENCH_VXLAN_DATAPATH:-splice}
export BENCH_VM_PORT_ARGS=${BENCH_VM_PORT_ARGS---streaming_stores off}
export BENCH_UPLINK_ARGS=${BENCH_UPLINK_ARGS:-}
case $BENCH_VXLAN_DATAPATH in
    splice | socket) ;;
    *) fail "BENCH_VXLAN_DATAPATH must be splice or socket, not '$BENCH_VXLAN_DATAPATH'" ;;
esac
bench_init vnet-vxlan-bench "$@"
S=${BENCH_SECONDS:-5}
REPEAT=${BENCH_REPEAT:-3}
NDR_S=${BENCH_NDR_SECONDS:-2}
NDR_STEPS=${BENCH_NDR_STEPS:-6}
NDR_LOSS=${BENCH_NDR_LOSS:-1}

need_built "$PKTGEN"
bench_need_command iperf3 "apt install iperf3"
bench_work

# ---- hosts and underlay -----------------------------------------------------------
HA=$(ns_name bxa)
HB=$(ns_name bxb)
netns_new "$HA"
netns_new "$HB"
UA=$(link_name bxu a)
UB=$(link_name bxu b)
ip link add "$UA" netns "$HA" type veth peer name "$UB" netns "$HB" || fail "underlay veth"
ip -n "$HA" addr add 10.202.0.1/24 dev "$UA" && ip -n "$HB" addr add 10.202.0.2/24 dev "$UB" ||
    fail "underlay addresses"
ip -n "$HA" link set "$UA" up && ip -n "$HB" link set "$UB" up || fail "underlay up"
ip -n "$HA" neigh replace 10.202.0.2 lladdr "$(ip -n "$HB" -br link show "$UB" | awk '{print $3}')" \
    dev "$UA" nud permanent || fail "neighbour"
ip -n "$HB" neigh replace 10.202.0.1 lladdr "$(ip -n "$HA" -br link show "$UA" | awk '{print $3}')" \
    dev "$UB" nud permanent || fail "neighbour"
local_ip() { [ "$1" = a ] && echo 10.202.0.1 || echo 10.202.0.2; }
remote_ip() { [ "$1" = a ] && echo 10.202.0.2 || echo 10.202.0.1; }
host_ns() { [ "$1" = a ] && echo "$HA" || echo "$HB"; }

# ---- vnetd system ----------------------------------------------------------------------
for h in a b; do
    ns=$(host_ns $h)
    printf '[daemon]\ncontrol_socket = "%s"\n[[switch]]\nname = "s0"\n%s\n' "$WORK/$h.ctl" \
        "${BENCH_VNETD_TOML:-}" >"$WORK/$h.toml"
    bg_start --log "$OUT/vnetd-$h.log" ip netns exec "$ns" "$VNETD" --config "$WORK/$h.toml"
    eval "VNETD_$h=$BG_PID"
    wait_for 10 "vnetd on $ns did not start" test -S "$WORK/$h.ctl"
    ctl=("$VNETCTL" --socket "$WORK/$h.ctl")
    "${ctl[@]}" switch uplink add s0 vxlan --vni 100 --local "$(local_ip $h)" \
        --remote "$(remote_ip $h)" --datapath "$BENCH_VXLAN_DATAPATH" $BENCH_UPLINK_ARGS >/dev/null ||
        fail "uplink on $h"
    tap=$(link_name bxt $h)
    "${ctl[@]}" port add tap pv --tap "$tap" --switch s0 >/dev/null || fail "tap port on $h"
    pod=$(ns_name bxpv $h)
    netns_new "$pod"
    ip -n "$ns" link set "$tap" netns "$pod" || fail "tap into $pod"
    ip -n "$pod" link set "$tap" name eth0 mtu 1450 up && ip -n "$pod" link set lo up || fail "pod link"
    ip -n "$pod" addr add "10.210.0.$([ $h = a ] && echo 1 || echo 2)/24" dev eth0 || fail "pod addr"
    vms=(vm)
    [ $h = a ] && vms+=(vm2)
    for p in "${vms[@]}"; do
        "${ctl[@]}" port add vhost-user "$p" --socket-path "$WORK/$h-$p.sock" --switch s0 $BENCH_VM_PORT_ARGS >/dev/null ||
            fail "port $p on $h"
    done
    fail_log "$OUT/vnetd-$h.log" 20
done
VPOD_A=$(ns_name bxpv a)
VPOD_B=$(ns_name bxpv b)

# ---- kernel system ----------------------------------------------------------------------
for h in a b; do
    ns=$(host_ns $h)
    ip -n "$ns" link add brk type bridge || fail "bridge on $h"
    ip -n "$ns" link add vxlan200 type vxlan id 200 local "$(local_ip $h)" dstport 4790 || fail "vxlan on $h"
    ip -n "$ns" link set vxlan200 mtu 1450 master brk up && ip -n "$ns" link set brk up || fail "kernel links $h"
    bridge -n "$ns" fdb append 00:00:00:00:00:00 dev vxlan200 dst "$(remote_ip $h)" || fail "fdb $h"
    pod=$(ns_name bxpk $h)
    netns_new "$pod"
    ip link add kv netns "$pod" type veth peer name "kvh$h" netns "$ns" || fail "pod veth $h"
    ip -n "$ns" link set "kvh$h" mtu 1450 master brk up || fail "veth into bridge $h"
    ip -n "$pod" link set kv name eth0 mtu 1450 up && ip -n "$pod" link set lo up || fail "kernel pod link"
    ip -n "$pod" addr add "10.211.0.$([ $h = a ] && echo 1 || echo 2)/24" dev eth0 || fail "kernel pod addr"
done
KPOD_A=$(ns_name bxpk a)
KPOD_B=$(ns_name bxpk b)

# Both systems answer a ping before anything is measured.
ip netns exec "$VPOD_A" busybox ping -c 3 -W 2 10.210.0.2 >/dev/null || fail "vnetd pods do not ping"
ip netns exec "$KPOD_A" busybox ping -c 3 -W 2 10.211.0.2 >/dev/null || fail "kernel pods do not ping"
bg_start --log "$OUT/iperf-v.log" ip netns exec "$VPOD_B" iperf3 -s -p 5201
bg_start --log "$OUT/iperf-k.log" ip netns exec "$KPOD_B" iperf3 -s -p 5202
sleep 1

CSV="$OUT/vxlan.csv"
echo "row,system,rep,value,unit,extra" >"$CSV"
sample() { echo "$1,$2,$3,$4,$5,${6:-}" >>"$CSV"; }

# iperf ROW SYSTEM REP ARGS...: one iperf3 run from the system's pod A to pod B.
iperf_row() {
    local row=$1 sys=$2 rep=$3 pod dst port
    shift 3
    if [ "$sys" = vnetd ]; then pod=$VPOD_A dst=10.210.0.2 port=5201; else pod=$KPOD_A dst=10.211.0.2 port=5202; fi
    ip netns exec "$pod" iperf3 -c "$dst" -p "$port" -t "$S" -J "$@" >"$WORK/iperf.json" 2>&1 ||
        { sample "$row" "$sys" "$rep" "" "" "iperf3 failed"; return; }
    python3 - "$WORK/iperf.json" "$row" "$sys" "$rep" >>"$CSV" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); row, sysname, rep = sys.argv[2:5]
end = j["end"]
if "sum_received" in end and "lost_packets" not in end.get("sum", {}):
    print(f"{row},{sysname},{rep},{end['sum_received']['bits_per_second']/1e9:.3f},Gbit/s,retransmits {end['sum_sent'].get('retransmits', 0)}")
else:
    s = end["sum"]
    delivered = s["packets"] - s["lost_packets"]
    print(f"{row},{sysname},{rep},{delivered/s['seconds']/1e3:.1f},kpps,lost {s['lost_percent']:.1f}% of {s['packets']}")
PY
}

# udp_at SYSTEM LEN PPS: one paced iperf3 UDP run of NDR_S seconds from the
# system's pod A; prints "DELIVERED_PPS LOST_PERCENT".
udp_at() {
    local sys=$1 len=$2 pps=$3 pod dst port
    if [ "$sys" = vnetd ]; then pod=$VPOD_A dst=10.210.0.2 port=5201; else pod=$KPOD_A dst=10.211.0.2 port=5202; fi
    ip netns exec "$pod" iperf3 -c "$dst" -p "$port" -t "$NDR_S" -J -u -l "$len" \
        -b "$((pps * len * 8))" >"$WORK/ndr.json" 2>&1 || { echo "0 100"; return; }
    python3 - "$WORK/ndr.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum"]
print(f"{(s['packets'] - s['lost_packets']) / s['seconds']:.0f} {s['lost_percent']:.2f}")
PY
}

# ndr_row ROW SYSTEM REP LEN FLOOD_ROW: the bisection for ROW; its upper
# bound is what FLOOD_ROW (the same frames at -b 0) sent in this repeat.
ndr_row() {
    local row=$1 sys=$2 rep=$3 len=$4 flood=$5 hi lo=0 mid best=0 best_offered=0 got loss step
    hi=$(awk -F, -v r="$flood" -v s="$sys" -v n="$rep" -v t="$S" \
        '$1 == r && $2 == s && $3 == n { split($6, w, " "); print int(w[4] / t) }' "$CSV")
    if [ -z "$hi" ] || [ "$hi" -le 0 ]; then
        sample "$row" "$sys" "$rep" "" "" "no flood row to bound it"
        return
    fi
    for ((step = 0; step < NDR_STEPS; step++)); do
        mid=$(((lo + hi) / 2))
        read -r got loss < <(udp_at "$sys" "$len" "$mid")
        if python3 -c "import sys; sys.exit(0 if float('$loss') <= float('$NDR_LOSS') else 1)"; then
            lo=$mid best=$got best_offered=$mid
        else
            hi=$mid
        fi
    done
    sample "$row" "$sys" "$rep" "$(python3 -c "print(f'{$best/1e3:.1f}')")" kpps "offered $best_offered pps"
}

# vm ROW REP ARGS...: vnet-pktgen on hA's port vm -> hB's port vm
# (vmgso_local: -> hA's port vm2).
vm_row() {
    local row=$1 rep=$2 rxargs=() rxsock=$WORK/b-vm.sock dst=02:00:00:00:0b:01
    shift 2
    case $row in vmgso*) rxargs=(--gso --mrg-rxbuf on) ;; esac
    [ "$row" = vmgso_local ] && rxsock=$WORK/a-vm2.sock dst=02:00:00:00:0a:02
    bg_start --out "$WORK/rx.out" --err "$WORK/rx.err" "$PKTGEN" --socket-path "$rxsock" \
        --rx --duration $((S + 3)) --connect-timeout 10 "${rxargs[@]}"
    local rx=$BG_PID
    wait_for 10 "the receiving vnet-pktgen did not come up" log_has "$WORK/rx.err" "link up"
    "$PKTGEN" --socket-path "$WORK/a-vm.sock" --tx --duration "$S" --connect-timeout 10 \
        --src-mac 02:00:00:00:0a:01 --dst-mac "$dst" "$@" >"$WORK/tx.out" 2>"$WORK/tx.err" ||
        fail "tx pktgen: $(tail -2 "$WORK/tx.err")"
    stop_pid "$rx" INT >/dev/null
    local pkts bytes
    pkts=$(pktgen_value "$WORK/rx.out" rx-packets)
    bytes=$(pktgen_value "$WORK/rx.out" rx-bytes)
    if [ "$row" != "${row#vmgso}" ]; then
        sample "$row" vnetd "$rep" "$(python3 -c "print(f'{$bytes*8/$S/1e9:.3f}')")" Gbit/s "$pkts frames"
    else
        sample "$row" vnetd "$rep" "$(python3 -c "print(f'{$pkts/$S/1e3:.1f}')")" kpps \
            "sent $(pktgen_value "$WORK/tx.out" tx-packets)"
    fi
}

# The receivers' MACs are learned once (a broadcast from each), so the
# rows measure known unicast, as between two VMs that talked before.
for learn in b-vm,02:00:00:00:0b:01 a-vm2,02:00:00:00:0a:02; do
    "$PKTGEN" --socket-path "$WORK/${learn%,*}.sock" --tx --count 1 --src-mac "${learn#*,}" \
        --dst-mac ff:ff:ff:ff:ff:ff --connect-timeout 10 >/dev/null 2>&1 || fail "learning frame from ${learn%,*}"
done

for ((rep = 1; rep <= REPEAT; rep++)); do
    for sys in vnetd kernel; do
        iperf_row udp64 "$sys" "$rep" -u -l 22 -b 0
        iperf_row udp1400 "$sys" "$rep" -u -l 1372 -b 0
        iperf_row tcp "$sys" "$rep"
        ndr_row udp64_ndr "$sys" "$rep" 22 udp64
        ndr_row udp1400_ndr "$sys" "$rep" 1372 udp1400
    done
    vm_row vm64 "$rep" --size 64
    vm_row vm1400 "$rep" --size 1400
    for row in vmgso vmgso_local; do
        vm_row "$row" "$rep" --gso --size 65000 --mss 1398
    done
    echo "repeat $rep of $REPEAT done"
done

# Where frames were lost, over the whole run: every device's kernel drop
# counters on the vnetd path, and vnetd's drops by reason.
{
    for ns in "$VPOD_A" "$HA" "$HB" "$VPOD_B"; do
        for dev in $(ip netns exec "$ns" ls /sys/class/net); do
            case $dev in lo | brk | vxlan200 | kvh*) continue ;; esac
            echo "$ns $dev tx_dropped $(link_stat "$ns" "$dev" tx_dropped) rx_dropped $(link_stat "$ns" "$dev" rx_dropped)"
        done
    done
    # A datagram the receiving iperf3 had no socket buffer for: where the
    # vnetd pods' loss-bounded rows lose, as that iperf3 shares the CPUs
    # with both hosts' workers. In the hosts' namespaces: VXLAN datagrams
    # the socket datapath's receiving worker had no buffer for (an
    # unpaced VM -> VM sender that outruns it loses them there).
    for ns in "$VPOD_B" "$KPOD_B" "$HA" "$HB"; do
        echo "$ns UdpRcvbufErrors $(ip netns exec "$ns" nstat -asz UdpRcvbufErrors | awk '$1 == "UdpRcvbufErrors" { print $2 }')"
    done
    for h in a b; do
        "$VNETCTL" --socket "$WORK/$h.ctl" --json stats >"$OUT/stats-$h.json"
        python3 - "$OUT/stats-$h.json" "$h" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["ports"]:
    for q in p["queues"]:
        for d in ("rx", "tx"):
            drops = {k: v for k, v in q[d]["drops"].items() if v}
            if drops:
                print(f"vnetd {sys.argv[2]} port {p['name']} {d} drops {drops}")
PY
    done
} >"$OUT/drops.txt"
cat "$OUT/drops.txt"
stop_pid "$VNETD_a" || fail "vnetd on hA exit $?"
stop_pid "$VNETD_b" || fail "vnetd on hB exit $?"

python3 - "$CSV" "$S" "$REPEAT" "$OUT/summary.csv" "$NDR_LOSS" >"$OUT/vxlan.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(row, system):
    v = [float(r["value"]) for r in rows if r["row"] == row and r["system"] == system and r["value"]]
    return (statistics.median(v), v, next(r["unit"] for r in rows if r["row"] == row and r["value"])) if v else (None, [], "")
labels = {"udp64": "pod → pod, UDP 64-byte frames (iperf3 -u -l 22 -b 0)",
          "udp1400": "pod → pod, UDP 1414-byte frames (-l 1372)",
          "tcp": "pod → pod, TCP (GSO from the pod's stack)",
          "udp64_ndr": f"pod → pod, UDP 64 B, the highest rate losing ≤ {sys.argv[5]} %",
          "udp1400_ndr": f"pod → pod, UDP 1414 B, the highest rate losing ≤ {sys.argv[5]} %",
          "vm64": "VM → VM, 64 B (vnet-pktgen, vhost-user)",
          "vm1400": "VM → VM, 1400 B",
          "vmgso": "VM → VM, 64 KB GSO frames to a TSO guest",
          "vmgso_local": "VM → VM on one host's switch (hA), 64 KB GSO frames to a TSO guest"}
print(f"{sys.argv[3]} runs of {sys.argv[2]} s each, medians (all samples in vxlan.csv)\n")
print("| row | vnetd | kernel (veth + bridge + vxlan) | vnetd / kernel |")
print("|---|---|---|---|")
summary = csv.writer(open(sys.argv[4], "w", newline=""))
summary.writerow(["row", "unit", "vnetd_median", "kernel_median", "vnetd_vs_kernel"])
for key, label in labels.items():
    v, vs, unit = med(key, "vnetd")
    k, ks, _ = med(key, "kernel")
    vt = f"{v:g} {unit}" if v is not None else "n/a"
    kt = f"{k:g} {unit}" if k is not None else ("no vhost-user back end in the kernel here" if key.startswith("vm") else "n/a")
    ratio = f"{v / k:.2f}×" if v is not None and k else "—"
    print(f"| {label} | {vt} | {kt} | {ratio} |")
    summary.writerow([key, unit, "" if v is None else f"{v:g}", "" if k is None else f"{k:g}",
                      f"{v / k:.2f}" if v is not None and k else ""])
cross, _, _ = med("vmgso", "vnetd")
local, _, _ = med("vmgso_local", "vnetd")
ratio = cross / local if cross is not None and local else None
print(f"\nVM → VM 64 KB GSO frames, across the two hosts / on one host's switch: "
      f"{'n/a' if ratio is None else f'{ratio:.2f}×'} (issue 30's target: ≥ 0.8×)")
summary.writerow(["vmgso_vs_local", "ratio", "" if ratio is None else f"{ratio:.2f}", "", ""])
PY
cat "$OUT/vxlan.md"
bench_done "$OUT/summary.csv" "$OUT/vxlan.md" "$CSV" "$OUT/drops.txt"
