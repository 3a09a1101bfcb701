#!/bin/bash
# vnet-lifecycle-bench: what a back end's restart and a live migration cost
# a running guest, vnetd against DPDK testpmd (net_vhost) in one run (issue
# 10, "beyond the tests"; docs/BENCHMARKS.md). Not a CI test: it writes raw
# results and a table.
#
# Every measurement is one TCG QEMU guest (tests/integration/qemu/
# guest_init.sh) and a back end, each in a child run of this script (its own
# netns, sockets and cleanup: one failed run is recorded and the next one
# goes on). Per repeat, alternating the systems so that drift on this shared
# machine hits both:
#   restart  the guest streams a paced checksummed TCP transfer to a netns
#            and the netns one into it (vnet_stream=1, lib/stream_receiver.py
#            and lib/stream_sender.py, as test_qemu_restart.sh); mid-stream
#            the back end gets SIGKILL and the next one is started as soon
#            as it was reaped. Figure: the stall, the receiver's longest gap
#            between two reads after the kill (ms); the run counts as
#            verified when both streams' bytes and sha256 match at both
#            ends, with one connection each way, and QEMU (not rebooted) is
#            the same process throughout. Shapes:
#              client  QEMU -chardev server=on,wait=off; the back end
#                      connects and reconnects (vnetd --client; testpmd
#                      --vdev net_vhost0,iface=SOCK,client=1)
#              server  the back end listens, QEMU -chardev reconnect=1
#   migrate  QEMU live migration (`migrate tcp:127.0.0.1:PORT`, QMP) of a
#            guest that only answers pings (vnet_serve), from a source QEMU
#            to a destination QEMU (-incoming defer) on this machine, while
#            tools/bench/lifecycle/icmp_prober.py pings it from the netns
#            every 10 ms. Figures: the ping gap (the longest time between
#            two replies since the migrate command, ms) and QEMU's own
#            `downtime` (query-migrate on the source).
# Layouts (the tap's end in the netns has the host address):
#   restart, vnetd    vnetd in the netns, the guest's vhost-user port
#                     cross-connected to a persistent tap (--tap --persist
#                     on), as test_qemu_restart.sh
#   restart, testpmd  testpmd in the netns, io forwarding between
#                     net_vhost0 and net_tap0 on a persistent multi-queue tap
#                     made here (ip tuntap ... multi_queue; the address stays
#                     on it across testpmd's lives, as vnetd's persistent
#                     tap's does; mac=fixed: the same MAC each life). In the
#                     server shape the script removes the dead testpmd's
#                     socket file before the restart: DPDK's vhost server
#                     does not ("failed to bind: Address already in use;
#                     remove it and try again", then "Start ports failed")
#   migrate, vnetd    one vnetd switch with ports src and dst (vhost-user)
#                     and a tap moved into the netns, as
#                     test_qemu_migration.sh; vnetd's switch moves the MAC
#                     on the destination's SEND_RARP
#   migrate, testpmd  one testpmd in the netns with four ports: net_vhost0
#                     (src) <-> net_tap0 and net_vhost1 (dst) <-> net_tap1,
#                     io forwarding in pairs; the two taps in a Linux bridge
#                     that has the host address. DPDK's vhost library turns
#                     the destination's SEND_RARP into a RARP frame on its
#                     port, which moves the guest's MAC in the bridge. One
#                     process with one forwarding lcore rather than two
#                     testpmds: two busy pollers do not fit on 2 CPUs next
#                     to two QEMUs, and it is vnetd's shape (one process).
# The QEMU device is the tests' (vectors=0: QEMU 7.2 TCG + vhost-user +
# MSI-X; csum, gso, tso4 on, guest_announce=off so that QEMU sends
# SEND_RARP); each back end negotiates what it offers. testpmd's forwarding
# lcore busy-polls CPU $LAST_CPU (its main lcore CPU 0), vnetd is not pinned.
#
# Usage: tools/bench/lifecycle/vnet-lifecycle-bench.sh BUILD_DIR OUT_DIR   (as root)
#   BENCH_REPEAT (3), BENCH_DATA_KIB (8192: each stream's size),
#   BENCH_SHAPES ("client server"), BENCH_KINDS ("restart migrate"),
#   BENCH_SYSTEMS ("vnetd testpmd"), BENCH_TABLE_ONLY=1 (only rebuild the
#   table from OUT_DIR/results.csv)
# Writes OUT_DIR/results.csv (one row per run), OUT_DIR/summary.csv and
# lifecycle.md (the table: medians, min-max, verified runs), OUT_DIR/run.json
# (what ran: ../lib.sh) and OUT_DIR/runs/ (each run's raw logs; the prober's
# replies trimmed to the migration's seconds).
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ---- a child run: --one KIND SYSTEM SHAPE REP BUILD_DIR OUT_DIR -------------------
if [ "${1:-}" = --one ]; then
    ONE=1
    KIND=$2 SYSTEM=$3 SHAPE=$4 REP=$5
    shift 5
fi
# A child run, or only the table again, belongs to a run.json already written.
if [ -n "${ONE:-}" ] || [ "${BENCH_TABLE_ONLY:-}" = 1 ]; then export BENCH_CHILD=1; fi
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
bench_init vnet-lifecycle-bench "$@"
TI=$BENCH_TI
TESTPMD=$(command -v dpdk-testpmd || true)
REPEAT=${BENCH_REPEAT:-3}
DATA_KIB=${BENCH_DATA_KIB:-8192}

qemu_guest_prerequisites
bench_need_command nstat "Debian package iproute2"
bench_need_command dpdk-testpmd "Debian package dpdk"
mkdir -p "$OUT/runs" || fail "cannot make $OUT/runs"
CSV="$OUT/results.csv"

# write_table: OUT_DIR/lifecycle.md and summary.csv from OUT_DIR/results.csv.
write_table() {
    python3 - "$CSV" "$OUT/summary.csv" >"$OUT/lifecycle.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def value(r, field):
    if field == "path_ms":  # the ping gap beyond QEMU's own downtime
        return float(r["value_ms"]) - float(r["qemu_downtime_ms"]) if r["value_ms"] and r["qemu_downtime_ms"] else None
    return float(r[field]) if r[field] else None
def cell(kind, shape, system, field):
    runs = [r for r in rows if r["kind"] == kind and r["shape"] == shape and r["system"] == system]
    v = [value(r, field) for r in runs if r["verified"] == "yes" and value(r, field) is not None]
    if not runs:
        return None, "not run"
    if not v:
        return None, f"no verified run of {len(runs)}"
    m = statistics.median(v)
    return m, f"{m:.0f} ({min(v):.0f}-{max(v):.0f}), {len(v)}/{len(runs)}"
labels = [("restart", "client", "value_ms", "restart stall, QEMU server=on + back end reconnecting as client (ms)"),
          ("restart", "client", "ready_ms", "  the new back end's rings running again, after the old one was reaped (ms, polled every 10 ms)"),
          ("restart", "server", "value_ms", "restart stall, back end server + QEMU reconnect=1 (ms)"),
          ("restart", "server", "ready_ms", "  the new back end's rings running again, after the old one was reaped (ms, polled every 10 ms)"),
          ("migrate", "switch", "value_ms", "migration: ping gap seen from the netns, 10 ms probes (ms)"),
          ("migrate", "switch", "qemu_downtime_ms", "migration: QEMU's downtime (query-migrate, ms)"),
          ("migrate", "switch", "path_ms", "  the ping gap beyond QEMU's downtime, per run (ms)")]
print("cells: median (min-max), verified runs / runs (all runs in results.csv)\n")
print("| measurement | vnetd | DPDK testpmd (net_vhost) | vnetd / testpmd |")
print("|---|---|---|---|")
summary = csv.writer(open(sys.argv[2], "w", newline=""))
summary.writerow(["kind", "shape", "measure", "vnetd_median_ms", "testpmd_median_ms", "vnetd_vs_testpmd"])
for kind, shape, field, label in labels:
    v, vt = cell(kind, shape, "vnetd", field)
    t, tt = cell(kind, shape, "testpmd", field)
    if vt == "not run" and tt == "not run":
        continue
    ratio = f"{v / t:.2f}×" if v is not None and t else "—"
    print(f"| {label} | {vt} | {tt} | {ratio} |")
    summary.writerow([kind, shape, field, "" if v is None else f"{v:.0f}", "" if t is None else f"{t:.0f}",
                      f"{v / t:.2f}" if v is not None and t else ""])
PY
    cat "$OUT/lifecycle.md"
}

# ==== the parent: the initramfs once, the runs, the table ===========================
# BENCH_TABLE_ONLY=1: only the table again, from OUT_DIR/results.csv.
if [ "${BENCH_TABLE_ONLY:-}" = 1 ]; then
    write_table
    exit 0
fi
if [ -z "${ONE:-}" ]; then
    work_dir vnet-lifecycle-bench
    echo "== guest kernel $KVER; $REPEAT repeats; $(nproc) CPUs, load average $(cut -d ' ' -f 1-3 /proc/loadavg)"
    bash "$TI/qemu/build_initramfs.sh" "$KVER" "$WORK/initrd.gz" 2>"$WORK/initramfs.err" ||
        fail "initramfs: $(cat "$WORK/initramfs.err")"
    export BENCH_INITRD="$WORK/initrd.gz"
    echo "kind,system,shape,rep,value_ms,verified,qemu_downtime_ms,ready_ms,detail" >"$CSV"
    {
        echo "commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null) $(date -u '+%F %T') UTC"
        echo "load average at the start: $(cat /proc/loadavg)"
        echo "qemu: $("$QEMU" --version | head -n 1); testpmd: $(dpkg-query -W -f '${Version}' dpdk 2>/dev/null)"
        echo "kernel (guest): $KVER; BENCH_REPEAT=$REPEAT BENCH_DATA_KIB=$DATA_KIB"
    } >"$OUT/environment.txt"
    for ((rep = 1; rep <= REPEAT; rep++)); do
        for kind in ${BENCH_KINDS:-restart migrate}; do
            shapes=${BENCH_SHAPES:-client server}
            [ "$kind" = migrate ] && shapes=switch
            for shape in $shapes; do
                for sys in ${BENCH_SYSTEMS:-vnetd testpmd}; do
                    name="$kind-$sys-$shape-r$rep"
                    echo "== $name ($(date -u +%T), load $(cut -d ' ' -f 1 /proc/loadavg))"
                    bash "$0" --one "$kind" "$sys" "$shape" "$rep" "$BUILD_DIR" "$OUT" \
                        >"$OUT/runs/$name.txt" 2>&1
                    rc=$?
                    tail -n 4 "$OUT/runs/$name.txt" | sed 's/^/   /'
                    # A run that died before it wrote its row still gets one.
                    grep -q "^$kind,$sys,$shape,$rep," "$CSV" ||
                        echo "$kind,$sys,$shape,$rep,,no,,,run failed (exit $rc): $(grep -m 1 '^FAIL' "$OUT/runs/$name.txt" | tr ',' ';')" >>"$CSV"
                done
            done
        done
    done
    write_table
    bench_done "$OUT/summary.csv" "$OUT/lifecycle.md" "$CSV" "$OUT/environment.txt"
    exit 0
fi

# ==== a child run ===================================================================
[ -r "${BENCH_INITRD:-}" ] || fail "BENCH_INITRD: no initramfs (run the script without --one)"
work_dir vnet-lifecycle-one
cp "$BENCH_INITRD" "$WORK/initrd.gz" || fail "copy the initramfs"
NAME="$KIND-$SYSTEM-$SHAPE-r$REP"
D="$WORK/run" # the run's files: $D-qemu.log, ... (lib/qemu_stream.sh's convention)
RUN_OUT="$OUT/runs/$NAME"
# At exit (before WORK goes): the logs into OUT_DIR/runs/NAME-*.
keep_logs() {
    local f
    for f in "$WORK"/run-*; do
        case $f in *.sock | *.qmp | *.bin) continue ;; esac
        [ -f "$f" ] && cp "$f" "$RUN_OUT-${f##*/run-}"
    done
}
on_exit keep_logs
GUEST_MB=192
MAC=52:54:00:12:39:01
CHUNK=16384
QEMU_TIMEOUT=240
# shellcheck source=../../../tests/integration/lib/qemu_stream.sh
. "$TI/lib/qemu_stream.sh"
# shellcheck disable=SC2034 # L: the label of lib/qemu_stream.sh's messages
L=$NAME
NET=10.83.$((VT_ID % 250))
HOST_IP=$NET.1
GUEST_IP=$NET.2
NS=$(ns_name vnlcb)
netns_new "$NS"
ip -n "$NS" link set lo up
LCORES="0@0,1@$LAST_CPU"
PMD=(--nb-cores=1 --rxq=1 --txq=1 --total-num-mbufs=32768 --forward-mode=io --auto-start --stats-period 10)

# result VALUE_MS VERIFIED DOWNTIME_MS READY_MS DETAIL...: this run's row in results.csv.
result() {
    local detail="${*:5}"
    echo "$KIND,$SYSTEM,$SHAPE,$REP,$1,$2,$3,$4,${detail//,/;}" >>"$CSV"
    echo "RESULT $NAME: ${1:-?} ms verified=$2${3:+ qemu downtime $3 ms}; $detail"
}

# ---- restart --------------------------------------------------------------------------
# start_backend LIFE: the back end of the restart layout, log $D-backend-LIFE.log;
# BACKEND_PID (the program itself: ip netns exec and stdbuf exec it).
start_backend() {
    local life=$1
    if [ "$SYSTEM" = vnetd ]; then
        local client=()
        [ "$SHAPE" = client ] && client=(--client)
        bg_start --log "$D-backend-$life.log" ip netns exec "$NS" "$VNETD" --socket-path "$SOCK" \
            --tap "$TAP" --persist on --gro off --stats-file "$D-stats.json" \
            --control-socket "$WORK/ctl.sock" --log-level debug "${client[@]}"
    else
        local devarg=""
        [ "$SHAPE" = client ] && devarg=",client=1"
        dpdk_eal "$VT_ID" "$LCORES"
        bg_start --log "$D-backend-$life.log" ip netns exec "$NS" stdbuf -oL "$TESTPMD" "${EAL_ARGS[@]}" \
            --vdev "net_vhost0,iface=$SOCK,queues=1$devarg" --vdev "net_tap0,iface=$TAP,mac=fixed" -- "${PMD[@]}"
    fi
    BACKEND_PID=$BG_PID
}
# backend_ready LIFE: the back end has the front end's rings running.
backend_ready() {
    running "$BACKEND_PID" || fail_now "the back end exited: $(tail -n 3 "$D-backend-$1.log")"
    if [ "$SYSTEM" = vnetd ]; then
        log_has "$D-backend-$1.log" "queue pair 0 running"
    else
        log_has "$D-backend-$1.log" "virtio is now ready"
    fi
}
# backend_connected LIFE: the front end's connection is there (vnetd: the
# port took it; DPDK: "new device", logged once the socket is connected).
backend_connected() {
    if [ "$SYSTEM" = vnetd ]; then
        log_has "$D-backend-$1.log" "front end connected"
    else
        log_has "$D-backend-$1.log" "new device, handle is"
    fi
}
# wait_ready_ms LIFE T0_US SECS: poll every 10 ms until backend_ready;
# prints "CONNECTED_MS READY_MS", each since T0_US.
wait_ready_ms() {
    local end=$(($(_vt_now_us) + $3 * 1000000)) conn=""
    until backend_ready "$1"; do
        [ -z "$conn" ] && backend_connected "$1" && conn=$((($(_vt_now_us) - $2) / 1000))
        [ "$(_vt_now_us)" -lt "$end" ] || return 1
        sleep 0.01
    done
    local ready=$((($(_vt_now_us) - $2) / 1000))
    echo "${conn:-$ready} $ready"
}

run_restart() {
    TAP=$(link_name vnlct)
    SOCK="$WORK/vm.sock"
    local chardev
    [ "$SHAPE" = server ] && chardev="reconnect=1" || chardev="server=on,wait=off"
    echo "== $NAME: $SYSTEM, QEMU -chardev socket,$chardev; netns $NS, tap $TAP, host $HOST_IP, guest $GUEST_IP"
    on_exit ip -n "$NS" link del "$TAP"
    if [ "$SYSTEM" = testpmd ]; then
        ip -n "$NS" tuntap add mode tap multi_queue name "$TAP" || fail "tuntap add $TAP"
        ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
    fi
    bg_start --out "$D-receiver.out" --err "$D-receiver.err" \
        ip netns exec "$NS" python3 -u "$TI/lib/stream_receiver.py" 0.0.0.0 5300 $((QEMU_TIMEOUT - 20))
    RECEIVER_PID=$BG_PID
    wait_for 10 "the receiver did not listen" log_has "$D-receiver.out" '^listening'
    if [ "$SHAPE" = server ]; then
        start_backend 1
        wait_for 30 "the back end did not listen on $SOCK" test -S "$SOCK"
        start_qemu "$chardev"
    else
        start_qemu "$chardev"
        guest_wait 20 "QEMU did not listen on $SOCK" test -S "$SOCK"
        start_backend 1
    fi
    guest_wait 120 "the front end's rings did not run on the first back end" backend_ready 1
    if [ "$SYSTEM" = vnetd ]; then
        guest_wait 10 "vnetd did not open tap $TAP" log_has "$D-backend-1.log" "\[tap '$TAP'\] opened"
        ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
        ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
    fi

    guest_wait 90 "the guest's stream did not start" streams_past $((8 * CHUNK)) -1
    bg_start --out "$D-sender.out" --err "$D-sender.err" \
        ip netns exec "$NS" python3 -u "$TI/lib/stream_sender.py" "$GUEST_IP" 5301 $((DATA_KIB * 1024)) \
        $((QEMU_TIMEOUT - 40))
    SENDER_PID=$BG_PID
    guest_wait 30 "the stream into the guest did not start" streams_past $((8 * CHUNK)) $((8 * CHUNK))
    local qemu_before rx_at_kill tx_at_kill t_kill t_dead t_started
    qemu_before=$(qemu_identity)

    # ---- the kill and the restart ----
    rx_at_kill=$(progress_bytes "$D-receiver.out")
    tx_at_kill=$(progress_bytes "$D-sender.out")
    t_kill=$(_vt_now_us)
    kill -KILL "$BACKEND_PID"
    { wait "$BACKEND_PID"; } 2>/dev/null
    t_dead=$(_vt_now_us)
    forget "$BACKEND_PID"
    # DPDK's vhost server does not take over a stale socket file ("failed
    # to bind: Address already in use; remove it and try again", and
    # testpmd exits: "Start ports failed"): as its operator would, the
    # script removes it first (vnetd replaces it itself).
    local rm_note=""
    if [ "$SYSTEM" = testpmd ] && [ "$SHAPE" = server ]; then
        rm -f "$SOCK"
        rm_note="; the stale socket removed by the script before the restart"
    fi
    start_backend 2
    t_started=$(_vt_now_us)
    local conn_ms ready_ms
    read -r conn_ms ready_ms < <(wait_ready_ms 2 "$t_dead" 30)
    [ -n "$ready_ms" ] || fail_now "the restarted back end's rings did not run"
    echo "SIGKILL at $rx_at_kill bytes received, $tx_at_kill sent; restarted" \
        "$(((t_started - t_dead) / 1000)) ms after the reaping, connected after $conn_ms ms, rings running after $ready_ms ms"
    guest_wait 60 "the streams did not resume after the restart" \
        streams_past $((rx_at_kill + 16 * CHUNK)) $((tx_at_kill + 16 * CHUNK))
    kill -USR1 "$RECEIVER_PID" "$SENDER_PID"
    wait_until 60 log_has "$D-receiver.out" '^(done|error)' || fail_now "the stream from the guest did not end"
    wait_until 60 log_has "$D-sender.out" '^(done|error)' || fail_now "the stream into the guest did not end"
    local qemu_at_end
    qemu_at_end=$(qemu_identity)
    wait_until 30 exited "$QEMU_PID" || fail_now "the guest did not power off"
    stop_pid "$QEMU_PID" TERM 5
    local qemu_rc=$?
    console_text
    stop_pid "$RECEIVER_PID" TERM 5
    local receiver_rc=$?
    stop_pid "$SENDER_PID" TERM 5
    local sender_rc=$?
    local netns_tcp
    netns_tcp=$(ip netns exec "$NS" nstat -asz TcpRetransSegs TcpExtTCPTimeouts |
        awk '!/^#/ { printf "%s %s ", $1, $2 }')
    stop_pid "$BACKEND_PID" "$([ "$SYSTEM" = testpmd ] && echo INT || echo TERM)" 10

    check "QEMU is the one from before the kill ($qemu_before, then $qemu_at_end)" \
        test "$qemu_at_end" = "$qemu_before"
    check_streams_verified "$qemu_rc" "$receiver_rc" "$sender_rc"
    local stall_ms stall_from pacing_ms verified=yes
    read -r stall_ms stall_from pacing_ms < <(stall_after "$t_kill")
    ((${#FAILS[@]})) && verified=no
    ((${#FAILS[@]})) && printf 'failed: %s\n' "${FAILS[@]}"
    result "$stall_ms" "$verified" "" "$ready_ms" "stall from ${stall_from} s after the kill; pacing gap $pacing_ms ms;" \
        "restart forked $(((t_started - t_dead) / 1000)) ms after the reaping; front end connected $conn_ms ms" \
        "and rings running $ready_ms ms after it;" \
        "guest->host $RECV_SIZE/$SEND_SIZE B; host->guest $IN_RECV_SIZE/$IN_SIZE B; guest carrier_changes" \
        "$(guest 'eth0 carrier_changes '); netns $netns_tcp$rm_note${FAILS[*]:+; failed: ${FAILS[*]}}"
}

# ---- migration ------------------------------------------------------------------------
qmp() { python3 "$TI/lib/qmp.py" "$@"; }
vm_status() {
    qmp "$WORK/$1.qmp" query-status | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'
}
vm_status_is() { [ "$(vm_status "$1")" = "$2" ]; }
# start_guest ROLE [ARG...]: the migration's guest (serve mode: it answers
# pings, nothing else), its socket WORK/ROLE.sock, QMP WORK/ROLE.qmp; QEMU_PID.
start_guest() {
    local role=$1
    shift
    bg_start --log "$D-qemu-$role.log" timeout -k 5 "$QEMU_TIMEOUT" "$QEMU" -accel tcg \
        -m "$GUEST_MB" -smp 1 -nodefaults -no-user-config -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 ipv6.disable=1 vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_serve=100000000 vnet_wait=$QEMU_TIMEOUT" \
        -display none -monitor none -serial "file:$D-console-$role.log" -no-reboot \
        -qmp "unix:$WORK/$role.qmp,server=on,wait=off" \
        -object "memory-backend-memfd,id=mem,size=${GUEST_MB}M,share=on" -numa node,memdev=mem \
        -chardev "socket,id=chr0,path=$WORK/$role.sock" \
        -netdev type=vhost-user,id=net0,chardev=chr0 \
        -device "virtio-net-pci,netdev=net0,mac=$MAC,vectors=0,mrg_rxbuf=on,csum=on,guest_csum=on,gso=on,host_tso4=on,guest_tso4=on,guest_announce=off" \
        "$@"
    QEMU_PID=$BG_PID
}
migration_status() {
    qmp "$WORK/src.qmp" query-migrate >"$D-query-migrate.json" || return 1
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "none"))' "$D-query-migrate.json"
}
migration_over() {
    case $(migration_status) in
    completed) return 0 ;;
    failed | cancelled) fail "migration failed: $(cat "$D-query-migrate.json")" ;;
    esac
    return 1
}
replies_after() { # replies_after T: a reply arrived after T (epoch s)
    awk -v t="$1" '$1 == "reply" && $4 > t { f = 1 } END { exit !f }' "$D-probe.out"
}

run_migrate() {
    echo "== $NAME: $SYSTEM; netns $NS, host $HOST_IP, guest $GUEST_IP ($MAC)"
    if [ "$SYSTEM" = vnetd ]; then
        TAP=$(link_name vnlcm)
        cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$WORK/ctl.sock"
stats_file = "$D-stats.json"
[[switch]]
name = "s0"
destination_hold_us = 200000
[[port]]
name = "src"
type = "vhost-user"
socket_path = "$WORK/src.sock"
switch = "s0"
[[port]]
name = "dst"
type = "vhost-user"
socket_path = "$WORK/dst.sock"
switch = "s0"
[[port]]
name = "$TAP"
type = "tap"
switch = "s0"
TOML
        bg_start --log "$D-backend.log" "$VNETD" --config "$WORK/vnetd.toml" --log-level debug
        BACKEND_PID=$BG_PID
        wait_for 10 "vnetd did not listen on both sockets" log_count "$D-backend.log" "listening on" 2
        wait_for 10 "vnetd did not create tap $TAP" test -e "/sys/class/net/$TAP"
        ip link set "$TAP" netns "$NS" || fail "could not move $TAP into $NS"
        ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
        ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
    else
        local ta tb br=br0
        ta=$(link_name vnlta)
        tb=$(link_name vnltb)
        dpdk_eal "$VT_ID" "$LCORES"
        bg_start --log "$D-backend.log" ip netns exec "$NS" stdbuf -oL "$TESTPMD" "${EAL_ARGS[@]}" \
            --vdev "net_vhost0,iface=$WORK/src.sock,queues=1" --vdev "net_tap0,iface=$ta,mac=fixed" \
            --vdev "net_vhost1,iface=$WORK/dst.sock,queues=1" --vdev "net_tap1,iface=$tb,mac=fixed" \
            -- "${PMD[@]}"
        BACKEND_PID=$BG_PID
        wait_for 30 "testpmd did not start forwarding" log_has "$D-backend.log" "forwards packets on 4 streams"
        ip -n "$NS" link add "$br" type bridge || fail "bridge"
        for t in "$ta" "$tb"; do
            ip -n "$NS" link set "$t" master "$br" up || fail "$t into the bridge"
        done
        ip -n "$NS" addr add "$HOST_IP/24" dev "$br" || fail "ip addr add"
        ip -n "$NS" link set "$br" up || fail "bridge up"
        TAP=$br
    fi

    start_guest src
    QEMU_SRC=$QEMU_PID
    start_guest dst -incoming defer
    QEMU_DST=$QEMU_PID
    wait_for 30 "the destination QEMU's monitor did not answer" vm_status_is dst inmigrate
    qmp "$WORK/dst.qmp" migrate-incoming '{"uri": "tcp:127.0.0.1:0"}' >/dev/null ||
        fail "migrate-incoming on the destination failed"
    local port
    port=$(qmp "$WORK/dst.qmp" query-migrate | python3 -c '
import json, sys
print(next(a["port"] for a in json.load(sys.stdin)["socket-address"] if a["type"] == "inet"))') ||
        fail "the destination's query-migrate shows no listening port"
    wait_for 90 "the guest did not come up (serving)" log_has "$D-console-src.log" "VNET-GUEST serving"
    bg_start --out "$WORK/probe-full.out" --err "$D-probe.err" --stop INT \
        ip netns exec "$NS" python3 -u "$HERE/icmp_prober.py" "$GUEST_IP" 0.01 $((QEMU_TIMEOUT - 30))
    local prober=$BG_PID
    ln -sf "$WORK/probe-full.out" "$D-probe.out"
    wait_for 30 "the guest did not answer the prober" log_has "$WORK/probe-full.out" '^first-reply'
    sleep 3 # a steady state before the migration: the gaps of the pings themselves

    qmp "$WORK/src.qmp" migrate-set-parameters '{"max-bandwidth": 1073741824, "downtime-limit": 300}' \
        >/dev/null || fail "migrate-set-parameters failed"
    local t_migrate t_completed
    t_migrate=$(date +%s.%N)
    qmp "$WORK/src.qmp" migrate "{\"uri\": \"tcp:127.0.0.1:$port\"}" >"$D-migrate.out" 2>&1 ||
        fail "QEMU refused to migrate: $(cat "$D-migrate.out")"
    wait_for 90 "the migration did not complete" migration_over
    t_completed=$(date +%s.%N)
    wait_until 10 vm_status_is dst running
    local dst_status src_status resumed=no
    dst_status=$(vm_status dst)
    src_status=$(vm_status src)
    wait_until 20 replies_after "$t_completed" && resumed=yes
    sleep 2
    stop_pid "$prober" INT 5
    rm -f "$D-probe.out"
    # The replies around the migration (a second before it to 3 s after
    # the pings resumed), and the summary lines, for OUT_DIR.
    awk -v a="$t_migrate" -v b="$t_completed" '$1 != "reply" || ($4 > a - 1 && $4 < b + 5)' \
        "$WORK/probe-full.out" >"$D-probe.out"
    local gap_ms gap_from lost base_ms
    read -r gap_ms gap_from lost base_ms < <(awk -v tm="$t_migrate" '
        $1 == "reply" { if (last && $4 > tm && $4 - last > g) { g = $4 - last; from = last }
                        if (last && $4 <= tm && $4 - last > p) p = $4 - last; last = $4 }
        $1 == "sent" { lost = $2 - $4 }
        END { printf "%.1f %.3f %d %.1f\n", g * 1000, from - tm, lost, p * 1000 }' "$WORK/probe-full.out")
    hmp_info=$(qmp "$WORK/src.qmp" human-monitor-command '{"command-line": "info migrate"}')
    echo "$hmp_info" >"$D-info-migrate.txt"
    local status total downtime setup ram
    read -r status total downtime setup ram < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print(j.get("status"), j.get("total-time"), j.get("downtime"), j.get("setup-time"), j.get("ram", {}).get("transferred"))' \
        "$D-query-migrate.json")
    local mac_on
    if [ "$SYSTEM" = vnetd ]; then
        mac_on=$("$VNETCTL" --socket "$WORK/ctl.sock" --json mac list --switch s0 | python3 -c '
import json, sys
print(" ".join(e["port"] for e in json.load(sys.stdin) if e["mac"] == sys.argv[1]) or "none")' "$MAC")
    else
        mac_on=$(bridge -n "$NS" fdb show br "$TAP" | awk -v m="$MAC" '$1 == m { print $3 }' | tr '\n' ' ')
    fi
    qmp "$WORK/src.qmp" quit >/dev/null 2>&1
    qmp "$WORK/dst.qmp" quit >/dev/null 2>&1
    stop_pid "$QEMU_SRC" TERM 10
    stop_pid "$QEMU_DST" TERM 10
    stop_pid "$BACKEND_PID" "$([ "$SYSTEM" = testpmd ] && echo INT || echo TERM)" 10
    check "query-migrate status completed (is $status)" test "$status" = completed
    check "the destination runs (is $dst_status), the source is paused (is $src_status)" \
        test "$dst_status" = running -a "$src_status" = postmigrate
    check "pings answered again after the migration completed" test "$resumed" = yes
    local verified=yes
    ((${#FAILS[@]})) && verified=no
    ((${#FAILS[@]})) && printf 'failed: %s\n' "${FAILS[@]}"
    result "$gap_ms" "$verified" "$downtime" "" "gap from ${gap_from} s after the migrate command;" \
        "longest reply gap before it $base_ms ms; probes lost $lost; QEMU total-time $total ms setup $setup ms" \
        "ram $ram B; completed seen $(awk -v a="$t_migrate" -v b="$t_completed" 'BEGIN { printf "%.2f", b - a }') s" \
        "after the command; guest MAC on: $mac_on${FAILS[*]:+; failed: ${FAILS[*]}}"
}

case $KIND in
restart) run_restart ;;
migrate) run_migrate ;;
*) fail "unknown kind $KIND" ;;
esac
