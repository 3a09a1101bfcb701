#!/usr/bin/env bash
# vnetd in about twelve seconds of traffic, on a fresh Debian 12 machine (root):
# installs what is needed (the toolchain, the build's libraries, python3 and
# iproute2: scripts/install-deps.sh --demo; no test peers, no hugepages),
# builds what `cmake --install build` installs, moves packets both ways
# between a guest and a host tap, asks vnetd about it with vnetctl, then
# prints what happened.
#
#   guest:  vnet-pktgen, our virtio-net front end (a VM stand-in), connected
#           to vnetd's vhost-user socket
#   host:   the tap vnetd creates, inside a throwaway network namespace
#           (IPv6 off, so the kernel sends nothing of its own through it)
#
#   1. guest -> host, 64 B frames, 4 s      (vnet-pktgen --tx)
#   2. host -> guest, 64 B frames, 4 s      (a Python AF_PACKET sender in the
#                                            namespace, as fast as it goes;
#                                            vnet-pktgen --rx checks each frame)
#   3. guest -> host, 1500 B frames, 2 s
#   4. the L2 switch: a second vnetd puts guests a and b and a second tap on
#      one learning switch; b says hello once, then a sends to b's MAC for
#      2 s: only b gets it (the tap saw just the hello); vnetctl shows the
#      learned MACs and the switch's counters
#   5. two hosts joined by the kernel's VXLAN: two more namespaces as hosts,
#      a veth between them as the underlay, one vnetd in each with switch s0
#      and a VXLAN uplink added with vnetctl; guest c on one host sends to
#      guest d on the other, counted at every hop
#
# Numbers come from vnetd's stats file (packets, bursts, drops), the tap's
# kernel counters and the two ends' own reports. Rates are those of this run
# on this machine (a single Python sender is slower than vnetd: row 2 shows
# the sender's pace). The tools' logs are printed only when something fails.
#
# It leaves the machine as it found it apart from build/ and the packages:
# every process, namespace, link and file it made is removed at exit, also
# after a failure or Ctrl-C (tests/integration/lib/common.sh's EXIT trap).
# The kernel modules the links load on first use (tun, veth, vxlan) stay
# loaded, as after any `ip link add`.
#
#   bash scripts/demo.sh            (VNET_DEMO_SECONDS=4 for rows 1 and 2)
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
seconds=${VNET_DEMO_SECONDS:-4}
big_seconds=$(((seconds + 1) / 2))

if [ "$(id -u)" != 0 ]; then
    echo "demo.sh: run as root: it creates a network namespace and a tap" >&2
    exit 1
fi

# shellcheck source=../tests/integration/lib/common.sh
. "$top/tests/integration/lib/common.sh"
work_dir vnetd-demo
work=$WORK
VT_FAIL_LINES=25
ns=$(ns_name vnetd-demo)
tap=$(link_name vdemo)
sock=$work/vm0.sock
stats=$work/vnetd-stats.json

echo "== installing dependencies (scripts/install-deps.sh --demo)"
bash scripts/install-deps.sh --demo >"$work/install-deps.log" 2>&1 || fail "scripts/install-deps.sh --demo"

# vnet_installable: vnetd, vnetctl, vnet-pktgen, vnetd-cni and the BPF
# programs, so that `cmake --install build` works after the demo.
echo "== building vnetd, vnetctl, vnet-pktgen and vnetd-cni in build/"
{ cmake -S . -B build -G Ninja && ninja -C build vnet_installable; } >"$work/build.log" 2>&1 ||
    fail "the build"
vnetd=$top/build/apps/vnetd
pktgen=$top/build/apps/vnet-pktgen
frames=$top/tests/integration/lib/pktgen_frames.py

# CPUs: vnetd's worker on the last one, the guest on the first (two pollers
# on one CPU fight; docs/USAGE.md "Tuning the tap").
ncpu=$(nproc)
vnetd_cpu=()
guest_cpu=()
if [ "$ncpu" -ge 2 ]; then
    vnetd_cpu=(--cpu $((ncpu - 1)))
    guest_cpu=(taskset -c 0)
fi

echo "== namespace $ns with vnetd's tap $tap; vnetd listens on $sock"
netns_new "$ns"
ctl=$work/vnetd.ctl
bg_start --log "$work/vnetd.log" ip netns exec "$ns" "$vnetd" --socket-path "$sock" --tap "$tap" \
    --stats-file "$stats" --control-socket "$ctl" "${vnetd_cpu[@]}"
wait_for 10 "vnetd did not start" log_has "$work/vnetd.log" "listening on"
ip -n "$ns" link set "$tap" up || fail "$tap up"
wait_for 5 "vnetd wrote no stats file" log_has "$stats" "seconds"

stats_seconds() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$stats" 2>/dev/null
}

# snapshot NAME: vnetd's stats (a copy written after this call: the file is
# rewritten every second) and the tap's kernel counters.
snapshot() {
    local before i
    before=$(stats_seconds)
    for ((i = 0; i < 30; i++)); do
        sleep 0.1
        [ "$(stats_seconds)" != "$before" ] && break
    done
    cp "$stats" "$work/$1.json" || fail "reading $stats"
    local f
    for f in rx_packets rx_bytes rx_dropped tx_packets tx_bytes tx_dropped; do
        echo "$f $(ip netns exec "$ns" cat "/sys/class/net/$tap/statistics/$f")"
    done >"$work/$1.tap"
}

# guest_tx NAME SIZE SECONDS: vnet-pktgen --tx into vnetd.
guest_tx() {
    snapshot "$1-before"
    "${guest_cpu[@]}" "$pktgen" --socket-path "$sock" --tx --size "$2" --duration "$3" \
        --stats-interval 0 >"$work/$1.out" 2>"$work/$1.log" || fail "vnet-pktgen --tx"
    snapshot "$1-after"
}

echo "== guest -> host: vnet-pktgen sends 64 B frames for $seconds s"
guest_tx g2h64 64 "$seconds"

echo "== host -> guest: a Python AF_PACKET sender in $ns sends 64 B frames for $seconds s"
bg_start --out "$work/h2g64.out" --err "$work/h2g64.log" \
    "${guest_cpu[@]}" "$pktgen" --socket-path "$sock" --rx --stats-interval 0
rx_pid=$BG_PID
wait_for 30 "vnet-pktgen --rx did not come up" log_has "$work/h2g64.log" "link up"
snapshot h2g64-before
ip netns exec "$ns" python3 "$frames" inject --ifname "$tap" --duration "$seconds" --size 64 \
    --src-mac 02:00:00:00:00:02 --dst-mac 02:00:00:00:00:01 \
    >"$work/inject.out" 2>"$work/inject.log" || fail "the AF_PACKET sender"
sleep 0.5  # what is still queued in the tap reaches the guest
stop_pid "$rx_pid" INT || fail "vnet-pktgen --rx"
snapshot h2g64-after

echo "== guest -> host: vnet-pktgen sends 1500 B frames for $big_seconds s"
guest_tx g2h1500 1500 "$big_seconds"

# ---- the L2 switch: two guests and the host on one switch ---------------------
echo
echo "== the L2 switch: a second vnetd with guests a and b and a tap on switch br0"
sock_a=$work/a.sock
sock_b=$work/b.sock
ctl2=$work/vnetd-switch.ctl
tap2=$(link_name vdsw)
mac_a=02:00:00:00:0a:0a
mac_b=02:00:00:00:0b:0b
# destination_hold_us: a demo shares its CPUs with the guests it feeds, so
# the switch waits up to 200 ms for a full guest (the default is 100 us).
cat >"$work/switch.toml" <<TOML
[daemon]
control_socket = "$ctl2"
[[switch]]
name = "br0"
destination_hold_us = 200000
[[port]]
name = "a"
type = "vhost-user"
socket_path = "$sock_a"
switch = "br0"
[[port]]
name = "b"
type = "vhost-user"
socket_path = "$sock_b"
switch = "br0"
[[port]]
name = "$tap2"
type = "tap"
switch = "br0"
TOML
bg_start --log "$work/vnetd-switch.log" ip netns exec "$ns" "$vnetd" --config "$work/switch.toml" \
    "${vnetd_cpu[@]}"
wait_for 10 "the switch vnetd did not start" log_count "$work/vnetd-switch.log" "listening on" 2
ip -n "$ns" link set "$tap2" up || fail "$tap2 up"
# b says hello (one broadcast: a and the tap get it, the switch learns b),
# then receives; a sends to b's MAC, which only b's port gets.
"$pktgen" --socket-path "$sock_b" --tx --count 1 --src-mac "$mac_b" --dst-mac ff:ff:ff:ff:ff:ff \
    --stats-interval 0 >"$work/b-hello.out" 2>&1 || fail "vnet-pktgen b hello"
bg_start --out "$work/b-rx.out" --err "$work/b-rx.log" \
    "${guest_cpu[@]}" "$pktgen" --socket-path "$sock_b" --rx --stats-interval 0
b_pid=$BG_PID
wait_for 30 "vnet-pktgen b --rx did not come up" log_has "$work/b-rx.log" "link up"
tap2_before=$(link_stat "$ns" "$tap2" tx_packets)
"${guest_cpu[@]}" "$pktgen" --socket-path "$sock_a" --tx --src-mac "$mac_a" --dst-mac "$mac_b" \
    --size 64 --duration "$big_seconds" --stats-interval 0 >"$work/a-tx.out" 2>"$work/a-tx.log" ||
    fail "vnet-pktgen a --tx"
sleep 0.5
stop_pid "$b_pid" INT || fail "vnet-pktgen b --rx"
a_sent=$(pktgen_value "$work/a-tx.out" tx-packets)
b_got=$(pktgen_value "$work/b-rx.out" rx-verified)
tap2_more=$(($(link_stat "$ns" "$tap2" tx_packets) - tap2_before))
echo "a -> b (unicast to $mac_b, after learning): a sent $a_sent, b received $b_got verified," \
    "the tap got $tap2_more of them"
echo
"$top/build/apps/vnetctl" --socket "$ctl2" mac list || fail "vnetctl mac list"
echo
"$top/build/apps/vnetctl" --socket "$ctl2" switch list || fail "vnetctl switch list"

# ---- two hosts joined by VXLAN (tests/integration/lib/vxlan_hosts.sh) ------------
echo
echo "== two hosts joined by VXLAN: namespaces as hosts, a veth underlay, a vnetd with switch s0 in each"
VNETD=$vnetd
VNETCTL=$top/build/apps/vnetctl
VNI=4242
HOLD_US=200000
# shellcheck source=../tests/integration/lib/vxlan_hosts.sh
. "$top/tests/integration/lib/vxlan_hosts.sh"
vxlan_hosts_start
vxlan_uplinks_add
echo "vnetctl switch uplink add s0 vxlan --vni $VNI --local $IP_A --remote $IP_B   (and the mirror on $HB)"
ctl_a port add vhost-user c --socket-path "$work/c.sock" --switch s0 >/dev/null || fail "port c"
ctl_b port add vhost-user d --socket-path "$work/d.sock" --switch s0 >/dev/null || fail "port d"
mac_c=02:00:00:00:0c:0c
mac_d=02:00:00:00:0d:0d
# d says hello across the tunnel (hA's switch learns it behind the uplink),
# then receives what c sends it.
"$pktgen" --socket-path "$work/d.sock" --tx --count 1 --src-mac "$mac_d" --dst-mac ff:ff:ff:ff:ff:ff \
    --stats-interval 0 >"$work/d-hello.out" 2>&1 || fail "vnet-pktgen d hello"
bg_start --out "$work/d-rx.out" --err "$work/d-rx.log" "$pktgen" --socket-path "$work/d.sock" --rx \
    --stats-interval 0
d_pid=$BG_PID
wait_for 30 "vnet-pktgen d --rx did not come up" log_has "$work/d-rx.log" "link up"
veth_before=$(link_stat "$HA" "$UA" tx_packets)
"$pktgen" --socket-path "$work/c.sock" --tx --src-mac "$mac_c" --dst-mac "$mac_d" --count 20000 \
    --rate 20000 --stats-interval 0 >"$work/c-tx.out" 2>"$work/c-tx.log" || fail "vnet-pktgen c --tx"
sleep 0.5
stop_pid "$d_pid" INT || fail "vnet-pktgen d --rx"
echo "c -> d: c sent $(pktgen_value "$work/c-tx.out" tx-packets) on $HA, the underlay carried" \
    "$(($(link_stat "$HA" "$UA" tx_packets) - veth_before)) VXLAN datagrams," \
    "d received $(pktgen_value "$work/d-rx.out" rx-verified) verified on $HB" \
    "(both guests were offered mtu $(pktgen_value "$work/d-rx.out" mtu))"
echo
ctl_a mac list || fail "vnetctl mac list on $HA"
echo
ctl_a port list || fail "vnetctl port list on $HA"
vxlan_hosts_stop
echo

echo "== what the running vnetd says about itself (vnetctl, over its control socket $ctl)"
"$top/build/apps/vnetctl" --socket "$ctl" port list || fail "vnetctl port list"
echo
"$top/build/apps/vnetctl" --socket "$ctl" stats || fail "vnetctl stats"

echo
python3 - "$work" "$tap" <<'EOF' || fail "the report"
import json, sys

work, tap = sys.argv[1], sys.argv[2]


def stats(name):
    ports = {p["name"]: p["queues"][0] for p in json.load(open(f"{work}/{name}.json"))["ports"]}
    out = {}
    for port, key in (("vm0", "vm0"), (tap, "tap")):
        for direction in ("rx", "tx"):
            q = ports[port][direction]
            out[f"{key}.{direction}"] = (q["packets"], q["bursts"], sum(q["drops"].values()))
    return out


def kernel(name):
    return {k: int(v) for k, v in (line.split() for line in open(f"{work}/{name}.tap"))}


def report(name):
    return dict(line.split(": ", 1) for line in open(f"{work}/{name}.out") if ": " in line)


def delta(name):
    a, b = stats(f"{name}-before"), stats(f"{name}-after")
    ka, kb = kernel(f"{name}-before"), kernel(f"{name}-after")
    return ({k: tuple(y - x for x, y in zip(a[k], b[k])) for k in a},
            {k: kb[k] - ka[k] for k in ka})


rows, notes = [], []


def row(direction, size, sent, received, nbytes, secs, burst_key, drop_keys, vd):
    packets, bursts, _ = vd[burst_key]
    rows.append((direction, f"{size} B", f"{sent:,}", f"{received:,}",
                 f"{received / secs / 1e6:.3f}", f"{nbytes * 8 / secs / 1e9:.2f}",
                 f"{packets / bursts:.1f}" if bursts else "-",
                 f"{sum(vd[k][2] for k in drop_keys):,}", f"{sent - received:,}"))


def guest_to_host(name, size):
    vd, kd = delta(name)
    r = report(name)
    row("guest -> host", size, int(r["tx-packets"]), kd["rx_packets"], kd["rx_bytes"],
        float(r["duration-s"]), "vm0.rx", ("vm0.rx", "tap.tx"), vd)
    if kd["rx_dropped"]:
        notes.append(f"guest -> host {size} B: the host stack dropped {kd['rx_dropped']:,} frames")


def host_to_guest(name, size):
    vd, kd = delta(name)
    r = report(name)
    f = open(f"{work}/inject.out").read().split()  # sent N bytes B seconds T queue-full F
    sent, secs, full = int(f[1]), float(f[5]), int(f[7])
    row("host -> guest", size, sent, int(r["rx-packets"]), int(r["rx-bytes"]), secs, "vm0.tx",
        ("tap.rx", "vm0.tx"), vd)
    if full:
        notes.append(f"host -> guest: the sender met a full tap queue {full:,} times and waited")
    bad = int(r["rx-bad"])
    if bad:
        notes.append(f"host -> guest: {bad:,} frames arrived DAMAGED")
    return int(r["rx-verified"]), bad


guest_to_host("g2h64", 64)
verified, bad = host_to_guest("h2g64", 64)
guest_to_host("g2h1500", 1500)

head = ("direction", "frame", "sent", "received", "Mpps", "Gbit/s", "burst", "vnetd drops", "lost")
widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
for line in [head] + rows:
    print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in
                    enumerate(zip(line, widths))))
print()
print("received: the tap's rx_packets (guest -> host); vnet-pktgen's count (host -> guest,")
print(f"  {verified:,} verified byte for byte)")
print("Mpps, Gbit/s: received frames (without FCS) over the sender's run time")
print("burst: mean packets per vnetd burst; lost: sent - received")
for n in notes:
    print(f"note: {n}")
sys.exit(1 if bad else 0)
EOF
