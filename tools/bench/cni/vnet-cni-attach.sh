#!/bin/bash
# vnet-cni-attach: how long attaching a pod takes, and detaching it (issue 11's
# benchmark): vnetd-cni against Debian's bridge plugin in the same run.
# Not a CI test: it writes raw samples and a summary for docs/BENCHMARKS.md.
#
# Three systems, each one pod (a netns made here) attached and detached
# ATTACH_CYCLES times, with host-local IPAM (its own dataDir in the work dir,
# one network and subnet per system, the same route for all):
#   tap       vnetd-cni, host.iftype tap, on switch s0 of a vnetd started
#             here: ADD is port.add, the tap moved into the pod, renamed,
#             up, addressed, routed;
#   vhostuser vnetd-cni, host.iftype vhostuser: ADD ends with vnetd
#             listening on the pod's socket (nothing in the netns);
#   bridge    Debian's /usr/lib/cni/bridge on a Linux bridge made here
#             (it exists before the first ADD, as s0 does): a veth pair,
#             one end in the pod, up, addressed, routed; the peer.
# The systems are interleaved, one ADD+DEL of each per cycle, the order
# rotated every cycle, so drift and background load hit all of them alike.
# A fourth row, "exec floor", times /bin/true called the same way: what
# bash's fork and exec cost inside every sample.
#
# What is timed: the plugin's wall time, from just before bash forks it to
# its exit ($EPOCHREALTIME, microseconds), config on stdin from a file, the
# CNI_* variables in its environment (as tests/integration/test_cni_plugin.sh
# calls it). Each plugin returns only after the pod's interface is up with
# its address (vhostuser: after vnetd listens), so ADD's wall time is "ADD to
# link up"; that is checked right after each ADD, outside the timed part:
# the interface is UP and has the result's address (vhostuser: the socket
# is there). After each DEL (outside the timed part): the interface, the
# veth or the socket is gone.
#
# At the end: vnetd's port count and open fds as before the first cycle,
# host-local's store as empty as at the start, no veth left on the bridge,
# and vnetd exits 0 on SIGTERM. A failed ADD or DEL (with its error, e.g.
# "File exists" when a tap's name is still taken) is counted, logged in
# OUT_DIR/failures.log, cleaned up, and fails the run at the end.
#
# Usage: tools/bench/cni/vnet-cni-attach.sh BUILD_DIR OUT_DIR   (as root)
#   ATTACH_CYCLES (200) ATTACH_WARMUP (5: cycles first, not recorded)
#   ATTACH_STRACE=K: after the cycles, K more of each system (not recorded)
#   with the plugin under `strace -f --seccomp-bpf -ttt -T` (only the calls
#   strace_phases.py needs stop it): OUT_DIR/strace/SYSTEM-VERB-N.txt, and
#   OUT_DIR/phases.md, where an ADD's and a DEL's time goes (median of K).
# Writes OUT_DIR/samples.csv (system,cycle,verb,us), OUT_DIR/summary.csv
# and summary.md (the table), OUT_DIR/run.json (what ran: ../lib.sh),
# OUT_DIR/vnetd.log.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
bench_init vnet-cni-attach "$@"
PLUGINS=/usr/lib/cni
CYCLES=${ATTACH_CYCLES:-200}
WARMUP=${ATTACH_WARMUP:-5}
STRACE=${ATTACH_STRACE:-0}
STRACE_CALLS=execve,clone,clone3,socket,sendto,recvfrom,sendmsg,recvmsg,fsync,exit_group

need_built "$CNI"
for bin in "$PLUGINS/bridge" "$PLUGINS/host-local"; do
    [ -x "$bin" ] || fail "$bin not there (scripts/install-deps.sh installs containernetworking-plugins)"
done
[ "$STRACE" = 0 ] || bench_need_command strace "ATTACH_STRACE needs it: apt install strace"

bench_work
fail_log "$OUT/vnetd.log" 30
fail_log "$OUT/failures.log" 20
: >"$OUT/failures.log"

SYSTEMS=(tap vhostuser bridge floor)
declare -A PLUGIN=([tap]=$CNI [vhostuser]=$CNI [bridge]=$PLUGINS/bridge [floor]=/bin/true)
declare -A IFNAME=([tap]=eth0 [vhostuser]=net1 [bridge]=eth0 [floor]=eth0)
declare -A NS=() FAILED_CYCLES=()
for s in "${SYSTEMS[@]}"; do
    NS[$s]=$(ns_name attach "$s")
    netns_new "${NS[$s]}"
    FAILED_CYCLES[$s]=0
done
CONTAINER=bench-pod # one pod per system, attached again every cycle
BR=$(link_name vbr)
ip link add "$BR" type bridge || fail "ip link add $BR type bridge"
on_exit ip link del "$BR"
ip link set "$BR" up || fail "$BR up"

# ---- the configs (files, so nothing forks a subshell inside the timed part) ----

ipam() { # ipam SUBNET
    echo '"ipam": {"type": "host-local", "subnet": "'"$1"'", "dataDir": "'"$WORK/ipam"'",
          "routes": [{"dst": "10.90.0.0/16"}]}'
}
vnet_conf() { # vnet_conf NAME IFTYPE SUBNET
    cat <<JSON
{"cniVersion": "1.0.0", "name": "$1", "type": "vnetd-cni",
 "controlSocket": "$CTL", "stateDir": "$WORK/state", "socketDir": "$WORK/s",
 "host": {"iftype": "$2", "bridge": {"bridgeName": "s0"}},
 $(ipam "$3")}
JSON
}
vnet_conf bench-tap tap 10.89.0.0/24 >"$WORK/tap.json"
vnet_conf bench-vhost vhostuser 10.88.0.0/24 >"$WORK/vhostuser.json"
cat >"$WORK/bridge.json" <<JSON
{"cniVersion": "1.0.0", "name": "bench-bridge", "type": "bridge", "bridge": "$BR",
 "isGateway": false, "ipMasq": false,
 $(ipam 10.91.0.0/24)}
JSON
cp "$WORK/tap.json" "$WORK/floor.json"
SOCK="$WORK/s/${CONTAINER:0:12}/net1" # where vnetd-cni puts the pod's vhost-user socket

# ---- vnetd with switch s0 -----------------------------------------------------
bench_vnetd "$OUT/vnetd.log"
ctl switch add s0 >/dev/null || fail "switch add s0"

port_count() { ctl --json port list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
ipam_count() { find "$WORK/ipam" -type f ! -name lock ! -name 'last_reserved_ip*' 2>/dev/null | wc -l; }
bridge_ports() { ip -o link show master "$BR" | wc -l; }
PORTS0=$(port_count)
FDS0=$(fd_count "$VNETD_PID")
IPAM0=$(ipam_count)

# ---- one timed call, and the checks around it ----------------------------------

# timed SYSTEM VERB: the plugin's wall time in microseconds in US, its exit
# status in RC, its stdout in $WORK/out, stderr in $WORK/err. With TRACE set
# (N) the plugin runs under strace, its trace in OUT/strace/SYSTEM-VERB-N.txt.
TRACE=""
timed() {
    local s=$1 t0 t1 trace=()
    if [ -n "$TRACE" ]; then
        trace=(strace -f --seccomp-bpf -ttt -T -e "trace=$STRACE_CALLS"
            -o "$OUT/strace/$s-$2-$TRACE.txt")
    fi
    t0=$EPOCHREALTIME
    CNI_COMMAND=$2 CNI_CONTAINERID=$CONTAINER CNI_NETNS=/run/netns/${NS[$s]} \
        CNI_IFNAME=${IFNAME[$s]} CNI_PATH=$PLUGINS "${trace[@]}" "${PLUGIN[$s]}" \
        <"$WORK/$s.json" >"$WORK/out" 2>"$WORK/err"
    RC=$?
    t1=$EPOCHREALTIME
    US=$((${t1//[!0-9]/} - ${t0//[!0-9]/}))
}

# attached SYSTEM: after ADD, the pod's interface is up with the result's
# address (vhostuser: vnetd listens on the pod's socket); else WHY says why
# not. (Not in $(...): it counts LOWER_UP_LATE.)
LOWER_UP_LATE=0
ADDRESS_RE='"address": *"([^"]+)"' # the first ips[] entry's, in the result
UP_RE='<([^>]*,)?UP(,[^>]*)?>'       # IFF_UP in `ip -o link`'s flags
attached() {
    local s=$1 addr link
    WHY=""
    case $s in
        floor) return 0 ;;
        vhostuser)
            test -S "$SOCK" || { WHY="no socket $SOCK"; return 1; }
            return 0 ;;
    esac
    [[ $(<"$WORK/out") =~ $ADDRESS_RE ]] || { WHY="no address in the result"; return 1; }
    addr=${BASH_REMATCH[1]}
    link=$(ip -n "${NS[$s]}" -o link show dev "${IFNAME[$s]}" 2>&1) || { WHY=$link; return 1; }
    [[ $link =~ $UP_RE ]] || { WHY="not up: $link"; return 1; }
    # The carrier (LOWER_UP) is not part of "up" here; counted, to see
    # whether any plugin returns before it.
    [[ $link =~ LOWER_UP ]] || LOWER_UP_LATE=$((LOWER_UP_LATE + 1))
    ip -n "${NS[$s]}" -o addr show dev "${IFNAME[$s]}" | grep -q "inet $addr " ||
        { WHY="no $addr on ${IFNAME[$s]}"; return 1; }
}

# detached SYSTEM: after DEL, nothing of the pod's attachment is left; else
# WHY says what is.
detached() {
    local s=$1
    WHY=""
    case $s in
        floor) return 0 ;;
        vhostuser) [ ! -e "$SOCK" ] || { WHY="socket $SOCK still there"; return 1; } ;;
        *) ! ip -n "${NS[$s]}" link show dev "${IFNAME[$s]}" >/dev/null 2>&1 ||
            { WHY="${IFNAME[$s]} still in ${NS[$s]}"; return 1; } ;;
    esac
    [ "$s" != bridge ] || [ "$(bridge_ports)" = 0 ] || { WHY="$(bridge_ports) ports on $BR"; return 1; }
}

# failed SYSTEM CYCLE VERB WHY: logged and counted; the run goes on.
failed() {
    FAILED_CYCLES[$1]=$((FAILED_CYCLES[$1] + 1))
    {
        echo "cycle $2 $1 $3: $4"
        sed 's/^/  stdout: /' "$WORK/out"
        sed 's/^/  stderr: /' "$WORK/err"
    } >>"$OUT/failures.log"
}

# cycle SYSTEM N: one ADD and one DEL, timed; recorded unless N < 0.
cycle() {
    local s=$1 n=$2
    timed "$s" ADD
    if [ "$RC" != 0 ]; then
        failed "$s" "$n" ADD "exit $RC"
        timed "$s" DEL # clean up whatever the ADD left
        return
    fi
    [ "$n" -lt 0 ] || echo "$s,$n,ADD,$US" >>"$OUT/samples.csv"
    attached "$s" || failed "$s" "$n" ADD "returned, but $WHY"
    timed "$s" DEL
    if [ "$RC" != 0 ]; then
        failed "$s" "$n" DEL "exit $RC"
        return
    fi
    [ "$n" -lt 0 ] || echo "$s,$n,DEL,$US" >>"$OUT/samples.csv"
    detached "$s" || failed "$s" "$n" DEL "returned, but $WHY"
}

# ---- the cycles -------------------------------------------------------------------
echo "system,cycle,verb,us" >"$OUT/samples.csv"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = -WARMUP; i < CYCLES; i++)); do
    for ((k = 0; k < ${#SYSTEMS[@]}; k++)); do
        cycle "${SYSTEMS[(i + WARMUP + k) % ${#SYSTEMS[@]}]}" "$i"
    done
    running "$VNETD_PID" || fail "vnetd died in cycle $i"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$STRACE" != 0 ]; then
    rm -rf "$OUT/strace"
    mkdir "$OUT/strace" || fail "cannot make $OUT/strace"
    for ((TRACE = 0; TRACE < STRACE; TRACE++)); do
        for s in tap vhostuser bridge; do cycle "$s" -1; done
    done
    TRACE=""
    python3 "$HERE/strace_phases.py" "$OUT"/strace/*.txt >"$OUT/phases.md" ||
        fail "strace_phases.py failed"
    ok "$STRACE straced ADD and DEL of each system: $OUT/phases.md"
    cat "$OUT/phases.md"
fi

# ---- back where it started? ---------------------------------------------------------
check_equal "vnetd ports after $CYCLES cycles" before="$PORTS0" after="$(port_count)"
check_equal "vnetd fds after $CYCLES cycles" before="$FDS0" after="$(fd_count "$VNETD_PID")"
check_equal "host-local addresses after $CYCLES cycles" before="$IPAM0" after="$(ipam_count)"
check_equal "veths on $BR after $CYCLES cycles" before=0 after="$(bridge_ports)"
stop_pid "$VNETD_PID" TERM 20 || fail "vnetd exited with status $?"
ok "vnetd exited 0"
echo "ADDs that returned before the carrier (LOWER_UP): $LOWER_UP_LATE"

# ---- the table ----------------------------------------------------------------------
python3 - "$OUT/samples.csv" "${FAILED_CYCLES[tap]}" "${FAILED_CYCLES[vhostuser]}" "${FAILED_CYCLES[bridge]}" \
    "${FAILED_CYCLES[floor]}" "$OUT/summary.csv" <<'EOF' | tee "$OUT/summary.md"
import csv, math, statistics, sys
names = {"tap": "vnetd-cni tap (s0)", "vhostuser": "vnetd-cni vhostuser (s0)",
         "bridge": "Debian bridge + veth", "floor": "exec floor (/bin/true)"}
fails = dict(zip(["tap", "vhostuser", "bridge", "floor"], sys.argv[2:]))
ms = {}
for r in csv.DictReader(open(sys.argv[1])):
    ms.setdefault((r["system"], r["verb"]), []).append(int(r["us"]) / 1000)
def p99(v):  # nearest rank
    v = sorted(v)
    return v[math.ceil(0.99 * len(v)) - 1]
def cell(s, verb):
    v = ms.get((s, verb), [])
    return (statistics.median(v), p99(v)) if v else (float("nan"), float("nan"))
b_add, b_del = cell("bridge", "ADD"), cell("bridge", "DEL")
print("| system | cycles | ADD median ms | ADD p99 ms | DEL median ms | DEL p99 ms "
      "| ADD / bridge (median, p99) | DEL / bridge (median, p99) | failures |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
summary = csv.writer(open(sys.argv[6], "w", newline=""))
summary.writerow(["system", "cycles", "add_median_ms", "add_p99_ms", "del_median_ms", "del_p99_ms",
                  "add_vs_bridge_median", "add_vs_bridge_p99", "del_vs_bridge_median",
                  "del_vs_bridge_p99", "failures"])
for s in ["tap", "vhostuser", "bridge", "floor"]:
    a, d = cell(s, "ADD"), cell(s, "DEL")
    print(f"| {names[s]} | {len(ms.get((s, 'ADD'), []))} | {a[0]:.2f} | {a[1]:.2f} | {d[0]:.2f} "
          f"| {d[1]:.2f} | {a[0] / b_add[0]:.2f}x, {a[1] / b_add[1]:.2f}x "
          f"| {d[0] / b_del[0]:.2f}x, {d[1] / b_del[1]:.2f}x | {fails[s]} |")
    summary.writerow([s, len(ms.get((s, "ADD"), []))] + [f"{x:.2f}" for x in (
        a[0], a[1], d[0], d[1], a[0] / b_add[0], a[1] / b_add[1], d[0] / b_del[0], d[1] / b_del[1])]
        + [fails[s]])
EOF
bench_done "$OUT/summary.csv" "$OUT/summary.md" "$OUT/samples.csv"
TOTAL_FAILS=$((FAILED_CYCLES[tap] + FAILED_CYCLES[vhostuser] + FAILED_CYCLES[bridge] + FAILED_CYCLES[floor]))
[ "$TOTAL_FAILS" = 0 ] || fail "$TOTAL_FAILS failed calls: $OUT/failures.log"
pass "cni attach bench: $OUT/samples.csv, $OUT/summary.md"
