#!/bin/bash
# Live migration of a real Linux guest (QEMU, TCG) between two vhost-user
# ports of one vnetd switch, under traffic. vnetd has one L2 switch with
# three ports: src (vhost-user, the source QEMU's), dst (vhost-user, the
# destination QEMU's, started with -incoming defer) and a tap that the test
# moves into its own network namespace. The guest (qemu/guest_init.sh,
# vnet_stream=1) sends a file of random bytes over one TCP connection,
# paced, to lib/stream_receiver.py in the namespace, and lib/stream_sender.py
# there sends random bytes the other way, paced too (these land in RX
# buffers that vnetd writes: the dirty log's work); while both run the test
# sends QMP `migrate tcp:127.0.0.1:PORT` to the source; once QEMU reports
# the migration completed, both streams go on at full speed with the guest
# now running on the destination.
# Asserts:
#   - QEMU's query-migrate on the source: status "completed" (its own
#     `info migrate` is printed, with total time, downtime, bytes sent)
#   - the source QEMU is paused (postmigrate), the destination runs
#   - the stream: one connection, the receiver's byte count and sha256 equal
#     the guest's (printed before the migration, on the source's console),
#     bytes arrived after the migration completed (sent by the guest on the
#     destination), the guest's pipeline exited 0 on the destination
#   - the stream into the guest: the guest's byte count and sha256 (printed
#     on the destination's console) equal the sender's, and bytes were sent
#     after the migration completed
#   - the guest's driver counted no rx/tx errors: nothing vnetd wrote into
#     its memory during the pre-copy was lost on the way (rx_dropped is not
#     asserted: an IPv6 MLD report from the tap's first moments, see
#     test_qemu_guest.sh)
#   - vnetd's stats: the src port and the dst port both received the
#     guest's frames; the switch's MAC table has the guest's MAC on dst
#   - the RARP: a frame of ethertype 0x8035 from the guest's MAC reached the
#     tap after the switchover (QEMU asks for it with SEND_RARP: the
#     device has guest_announce=off, as for a guest that cannot announce
#     itself; vnetd offers GUEST_ANNOUNCE, and a guest that takes it sends
#     its own gratuitous ARP and QEMU no SEND_RARP: test_qemu_guest checks
#     that it is negotiated)
#   - vnetd logged dirty logging turned on for the src port (not for dst),
#     and SEND_RARP for the guest's MAC on dst
#   - vnetd is alive after it all and exits 0 on SIGTERM
# Printed for the notes: QEMU's downtime and the longest gap between two
# reads on the receiver (the stall the stream saw).
#
# VNET_TEST_EVPN=1 (ctest integration.test_qemu_migration_evpn): the same
# guest, streams and checks across three hosts joined by BGP EVPN through
# FRR (lib/evpn.sh: network namespaces on an underlay bridge, zebra + bgpd
# each, a route reflector), each with its own vnetd, switch s0 and an EVPN
# uplink (`evpn = true` in its config file): src on host A, dst on host B,
# the tap on host C (moved from C's namespace into one of its own; the
# guest gets the tunnel's MTU, host_mtu=1450). Host B's uplink runs the
# socket datapath (`vxlan_datapath = "socket"`: zebra's table in kernel
# devices, the tunnel on vnetd's steered socket), A's and C's the splice,
# so the guest's streams cross both and move from one to the other with
# it. The guest moves from A to B;
# QEMU and the migration stream stay in the root namespace (the ports'
# sockets are files). The RARP that QEMU asks B's vnetd for is learned on
# B's dst port, B's zebra advertises the MAC with a higher MAC-mobility
# sequence, and C's zebra moves it. Asserted on top of the above (each
# vnetd's log, stats and MAC table for its own port):
#   - before the migration, host C has the guest's MAC behind A's VTEP
#     (zebra, kernel FDB) and A's zebra has it as local;
#   - host C has it behind B's VTEP (zebra `show evpn mac vni`, and the
#     kernel FDB extern_learn entry) within 3 s of the switchover (B's
#     vnetd logging SEND_RARP), polled from the migrate command on (50 ms
#     between rounds); the time is printed;
#   - host A no longer advertises it: no static entry on A's vxtap, A's
#     zebra has it as remote behind B, and the only type-2 route for it
#     in C's BGP table is B's; A's and C's switches have it behind their
#     uplink.
#
# Usage: test_qemu_migration.sh BUILD_DIR   (as root; exit 77 = skipped)
# Environment: VNET_QEMU_KERNEL=/boot/vmlinuz-X (see guest_kernel),
# VNET_QEMU_DATA_KIB=16384 (the file's size), VNET_TEST_EVPN=1 (three
# EVPN hosts), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_KIB=${VNET_QEMU_DATA_KIB:-16384}
GUEST_MB=192
# Bounds (s): every QEMU's whole run; the guest's boot until its stream
# has started; the migration; the stream's end after the migration.
QEMU_TIMEOUT=240
BOOT_WAIT=90
MIGRATE_WAIT=60
STREAM_WAIT=60

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
qemu_guest_prerequisites
need_built "$VNETD" "$VNETCTL"

EVPN=${VNET_TEST_EVPN:-}
work_dir vnet-qemu-migration
NS=$(ns_name vnet-mig)
TAP=$(link_name vnmig)
NET=10.81.$((VT_ID % 250))
HOST_IP=$NET.1
GUEST_IP=$NET.2
MAC=52:54:00:12:37:01
NET_OPTS=",guest_announce=off"
T0=$(date +%s.%N)
for f in qemu-src.log qemu-dst.log console-src.txt console-dst.txt receiver.out sender.out rarp.out; do
    fail_log "$WORK/$f" 30
done

# Each port's vnetd: its log, stats file and control socket (one vnetd
# for all three, or one per EVPN host).
declare -A LOG_OF=() STATS_OF=() CTL_OF=()
VNETD_PIDS=()
# The switch's hold at a full destination is long (200 ms) for a TCG guest
# that is slow to post RX buffers.
SWITCH_TOML='[[switch]]
name = "s0"
destination_hold_us = 200000'
# port_toml ROLE: the [[port]] of src, dst (vhost-user) or tap.
port_toml() {
    if [ "$1" = tap ]; then
        printf '[[port]]\nname = "%s"\ntype = "tap"\nswitch = "s0"\n' "$TAP"
    else
        printf '[[port]]\nname = "%s"\ntype = "vhost-user"\nsocket_path = "%s"\nswitch = "s0"\n' \
            "$1" "$WORK/$1.sock"
    fi
}

if [ -z "$EVPN" ]; then
    # ---- vnetd: one switch, the two guest ports and the tap ------------------------
    echo "== guest kernel $KVER; netns $NS, tap $TAP, host $HOST_IP, guest $GUEST_IP ($MAC)"
    guest_initramfs
    netns_new "$NS"
    CONF="$WORK/vnetd.toml"
    CTL="$WORK/ctl.sock"
    STATS="$WORK/stats.json"
    fail_log "$WORK/vnetd.log" 40
    cat >"$CONF" <<TOML
[daemon]
control_socket = "$CTL"
stats_file = "$STATS"
$SWITCH_TOML
$(port_toml src)
$(port_toml dst)
$(port_toml tap)
TOML
    start_vnetd "$WORK/vnetd.log" --config "$CONF" --log-level debug
    VNETD_PIDS=("$VNETD_PID")
    for role in src dst tap; do
        LOG_OF[$role]=$WORK/vnetd.log STATS_OF[$role]=$STATS CTL_OF[$role]=$CTL
    done
    wait_for 10 "vnetd did not listen on both sockets" log_count "$WORK/vnetd.log" "listening on" 2
    TAP_HOME=()
else
    # ---- three EVPN hosts: A with src, B with dst, C with the tap ----------------------
    # shellcheck source=lib/evpn.sh
    . "$HERE/lib/evpn.sh"
    VNI=100
    VX=vxlan$VNI
    CONVERGE_S=3 # issue 30: a moved MAC is followed within 3 s
    declare -A HOST_OF=([src]=1 [dst]=2 [tap]=3) NAME_OF=([1]=A [2]=B [3]=C)
    echo "== guest kernel $KVER; EVPN hosts A (src), B (dst), C (tap $TAP into netns $NS);" \
        "host $HOST_IP, guest $GUEST_IP ($MAC)"
    guest_initramfs
    netns_new "$NS"
    evpn_underlay_start
    for role in src dst tap; do
        n=${HOST_OF[$role]}
        evpn_host_add "$n"
        d=$WORK/h$n
        mkdir -p "$d"
        LOG_OF[$role]=$WORK/vnetd-${NAME_OF[$n]}.log STATS_OF[$role]=$d/stats.json CTL_OF[$role]=$d/ctl.sock
        fail_log "${LOG_OF[$role]}" 25
        cat >"$d/vnetd.toml" <<TOML
[daemon]
control_socket = "${CTL_OF[$role]}"
stats_file = "${STATS_OF[$role]}"
$SWITCH_TOML
[[port]]
name = "uplink-s0"
type = "vxlan"
switch = "s0"
vni = $VNI
vxlan_local = "$EVPN_HOST_IP"
evpn = true
vxlan_datapath = "$([ "$role" = dst ] && echo socket || echo splice)"
$(port_toml "$role")
TOML
        start_vnetd "${LOG_OF[$role]}" --netns "${EVPN_NS[$n]}" --config "$d/vnetd.toml" --log-level debug
        VNETD_PIDS+=("$VNETD_PID")
    done
    for role in src dst; do
        wait_for 10 "host ${NAME_OF[${HOST_OF[$role]}]}'s vnetd did not listen" log_has "${LOG_OF[$role]}" "listening on"
    done
    for n in 1 2 3; do
        wait_for 10 "host ${NAME_OF[$n]}'s BGP session with the reflector" evpn_established "$n"
    done
    TAP_HOME=(-n "${EVPN_NS[3]}")
    NET_OPTS+=",host_mtu=1450" # the tunnel's, as vnetd gives the tap
fi
tap_made() { ip "${TAP_HOME[@]}" link show "$TAP" >/dev/null; }
wait_for 10 "vnetd did not create tap $TAP" tap_made
ip "${TAP_HOME[@]}" link set "$TAP" netns "$NS" || fail "could not move $TAP into $NS"
ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
ip -n "$NS" link set lo up

# ---- in the namespace: the stream's receiver and the RARP capture ----------------
bg_start --out "$WORK/receiver.out" --err "$WORK/receiver.err" \
    ip netns exec "$NS" python3 -u "$HERE/lib/stream_receiver.py" "$HOST_IP" 5300 $((QEMU_TIMEOUT - 20))
RECEIVER_PID=$BG_PID
wait_for 10 "the receiver did not listen" log_has "$WORK/receiver.out" '^listening'
bg_start --out "$WORK/rarp.out" --err "$WORK/rarp.err" \
    ip netns exec "$NS" python3 -u "$HERE/lib/rarp_capture.py" "$TAP"
RARP_PID=$BG_PID
wait_for 10 "the RARP capture did not start" log_has "$WORK/rarp.out" '^ready'

# ---- the two QEMUs -------------------------------------------------------------------
# start_qemu ROLE [ARG...]: the same machine for both (same MAC, memory
# shared with vnetd), port ROLE's socket, QMP at WORK/ROLE.qmp; QEMU_PID.
start_qemu() {
    local role=$1
    shift
    guest_command --mb "$GUEST_MB" --console "$WORK/console-$role.log" --socket "$WORK/$role.sock" \
        --mac "$MAC" --net-opts "$NET_OPTS" \
        --append "vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_stream=1 vnet_data_kib=$DATA_KIB" \
        -- -qmp "unix:$WORK/$role.qmp,server=on,wait=off" "$@"
    bg_start --log "$WORK/qemu-$role.log" timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}"
    QEMU_PID=$BG_PID
}
qmp() { python3 "$HERE/lib/qmp.py" "$@"; }
hmp() { qmp "$1" human-monitor-command "{\"command-line\": \"$2\"}"; }
console_text() {
    local role
    for role in src dst; do
        tr -d '\r' <"$WORK/console-$role.log" >"$WORK/console-$role.txt" 2>/dev/null
    done
}
# fail_now MESSAGE: fail with the consoles made readable first.
fail_now() {
    console_text
    fail "$@"
}
# vm_status ROLE: "running", "inmigrate", "postmigrate", ... from query-status.
vm_status() {
    qmp "$WORK/$1.qmp" query-status | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'
}
vm_status_is() { [ "$(vm_status "$1")" = "$2" ]; }

echo "== booting the source guest; the destination waits (-incoming defer)"
start_qemu src
QEMU_SRC=$QEMU_PID
start_qemu dst -incoming defer
QEMU_DST=$QEMU_PID
wait_for 20 "the destination QEMU's monitor did not answer" vm_status_is dst inmigrate
# Port 0: the kernel picks a free one; query-migrate tells which.
qmp "$WORK/dst.qmp" migrate-incoming '{"uri": "tcp:127.0.0.1:0"}' >/dev/null ||
    fail_now "migrate-incoming on the destination failed"
PORT=$(qmp "$WORK/dst.qmp" query-migrate | python3 -c '
import json, sys
print(next(a["port"] for a in json.load(sys.stdin)["socket-address"] if a["type"] == "inet"))') ||
    fail_now "the destination's query-migrate shows no listening port"
echo "destination listening on tcp:127.0.0.1:$PORT"

# The stream runs (paced: 16 KiB every 40 ms) when a few chunks arrived.
receiver_bytes() { awk '$1 == "progress" { b = $3 } END { print b + 0 }' "$WORK/receiver.out"; }
streaming() {
    running "$QEMU_SRC" || fail_now "the source QEMU exited before the stream started"
    [ "$(receiver_bytes)" -ge $((8 * 16384)) ]
}
wait_for "$BOOT_WAIT" "the guest's stream did not start" streaming
# ... and the other way: the guest listens since before its stream started.
bg_start --out "$WORK/sender.out" --err "$WORK/sender.err" \
    ip netns exec "$NS" python3 -u "$HERE/lib/stream_sender.py" "$GUEST_IP" 5301 $((DATA_KIB * 1024)) \
    $((QEMU_TIMEOUT - 60))
SENDER_PID=$BG_PID
sender_bytes() { awk '$1 == "progress" { b = $3 } END { print b + 0 }' "$WORK/sender.out"; }
sending() {
    running "$SENDER_PID" || fail_now "the stream into the guest ended before the migration"
    [ "$(sender_bytes)" -ge $((8 * 16384)) ]
}
wait_for 30 "the stream into the guest did not start" sending
echo "streams running: $(receiver_bytes) bytes from the guest, $(sender_bytes) bytes to it before the migration"

# ---- the migration ---------------------------------------------------------------------
# A bandwidth cap well above what a TCG guest dirties, so that the
# pre-copy converges on a loaded machine (QEMU 7.2's default is 32 MiB/s).
qmp "$WORK/src.qmp" migrate-set-parameters '{"max-bandwidth": 1073741824, "downtime-limit": 300}' \
    >/dev/null || fail_now "migrate-set-parameters failed"
if [ -n "$EVPN" ]; then
    # mac_at N VTEP-HOST: host N has the guest's MAC behind host VTEP-HOST's
    # VTEP, in zebra and in the kernel FDB (zebra's extern_learn entry).
    mac_at() {
        evpn_mac_known "$1" $VNI "$MAC" "$EVPN_NET.$2" && evpn_remote_mac_in_fdb "${EVPN_NS[$1]}" $VX "$MAC" "$EVPN_NET.$2"
    }
    # advertised_by N: host N's vnetd has the MAC as a static entry on its vxtap.
    advertised_by() { bridge -n "${EVPN_NS[$1]}" fdb show dev vxtap$VNI | grep -q "^$MAC .*static"; }
    a_stopped() { ! advertised_by 1 && mac_at 1 2; }
    mac_show() { evpn_vtysh "$1" "show evpn mac vni $VNI mac $MAC"; }
    wait_for "$CONVERGE_S" "host C does not have the guest's MAC behind A's VTEP before the migration" mac_at 3 1
    advertised_by 1 || fail_now "host A's vxtap$VNI has no static entry for the guest's MAC"
    mac_show 1 | grep -q "Intf: vxtap$VNI" || fail_now "host A's zebra does not have the MAC as local: $(mac_show 1)"
    echo "--- before: host A: show evpn mac vni $VNI mac $MAC"
    mac_show 1
    echo "--- before: host C: show evpn mac vni $VNI mac $MAC"
    mac_show 3
    # From the migrate command on, in rounds 50 ms apart: when host C
    # first has the MAC behind B ("c-at-b US") and when host A first
    # stopped advertising it ("a-stopped US").
    (
        c="" a=""
        while [ -z "$c" ] || [ -z "$a" ]; do
            [ -z "$c" ] && mac_at 3 2 && c=$(_vt_now_us) && echo "c-at-b $c"
            [ -z "$a" ] && a_stopped && a=$(_vt_now_us) && echo "a-stopped $a"
            sleep 0.05
        done
    ) >"$WORK/evpn-watch.out" 2>/dev/null &
    WATCH_PID=$!
    track "$WATCH_PID" TERM 1
fi
echo "== migrate tcp:127.0.0.1:$PORT"
T_MIGRATE=$(date +%s.%N)
qmp "$WORK/src.qmp" migrate "{\"uri\": \"tcp:127.0.0.1:$PORT\"}" >"$WORK/migrate.out" 2>&1 ||
    fail_now "QEMU refused to migrate: $(cat "$WORK/migrate.out")"
# migration_status: the source's query-migrate status ("active", "completed",
# "failed", ...); query-migrate.json keeps the last answer.
migration_status() {
    qmp "$WORK/src.qmp" query-migrate >"$WORK/query-migrate.json" || return 1
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "none"))' \
        "$WORK/query-migrate.json"
}
migration_over() {
    local s
    s=$(migration_status)
    case $s in
    completed) return 0 ;;
    failed | cancelled) fail_now "migration $s: $(cat "$WORK/query-migrate.json")" ;;
    esac
    return 1
}
wait_for "$MIGRATE_WAIT" "the migration did not complete" migration_over
T_COMPLETED=$(date +%s.%N)
# Bytes from now on come from the guest on the destination: the source is paused.
kill -USR1 "$RECEIVER_PID" "$SENDER_PID"
echo "== QEMU (source): info migrate"
hmp "$WORK/src.qmp" "info migrate" | tee "$WORK/info-migrate.txt"
read -r MIG_STATUS MIG_TOTAL_MS MIG_DOWNTIME_MS MIG_RAM_BYTES MIG_RAM_MBPS < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
r = j.get("ram", {})
print(j.get("status"), j.get("total-time"), j.get("downtime"), r.get("transferred"), r.get("mbps"))' \
    "$WORK/query-migrate.json")
echo "query-migrate: status $MIG_STATUS total-time ${MIG_TOTAL_MS} ms downtime ${MIG_DOWNTIME_MS} ms" \
    "ram transferred $MIG_RAM_BYTES bytes (${MIG_RAM_MBPS} Mbit/s)"
SRC_STATUS=$(vm_status src)
wait_until 10 vm_status_is dst running
DST_STATUS=$(vm_status dst)

# ---- EVPN: the MAC follows the guest to host B --------------------------------------
if [ -n "$EVPN" ]; then
    watched() { awk -v w="$1" '$1 == w { print $2 }' "$WORK/evpn-watch.out"; }
    # Waited for longer than the bound, to print how long it did take.
    wait_until $((3 * CONVERGE_S)) eval '[ -n "$(watched c-at-b)" ] && [ -n "$(watched a-stopped)" ]'
    stop_pid "$WATCH_PID" TERM 1
    # The switchover: B's vnetd logs QEMU's SEND_RARP once the guest runs there.
    RARP_LOGGED=$(sed -n "s/^\([0-9-]*\)T\([0-9:.]*\) .*\[dst\] SEND_RARP: announcing $MAC.*/\1 \2/p" \
        "${LOG_OF[dst]}" | head -n 1)
    T_SWITCH_US=$(date -d "$RARP_LOGGED" +%s%6N 2>/dev/null)
    ms_after_switch() { [ -n "$1" ] && [ -n "$T_SWITCH_US" ] && echo $((($1 - T_SWITCH_US) / 1000)); }
    C_MS=$(ms_after_switch "$(watched c-at-b)")
    A_MS=$(ms_after_switch "$(watched a-stopped)")
    echo "switchover (B's vnetd: SEND_RARP) at ${RARP_LOGGED:-missing};" \
        "host C has $MAC behind B ${C_MS:-never} ms later, host A stopped advertising it ${A_MS:-never} ms later"
    echo "--- after: host C: show evpn mac vni $VNI mac $MAC (MAC mobility: B's sequence is higher)"
    mac_show 3 | tee "$WORK/evpn-c-after.txt"
    echo "--- after: host C: bridge fdb show dev $VX | grep $MAC"
    bridge -n "${EVPN_NS[3]}" fdb show dev $VX | grep "^$MAC " | tee "$WORK/evpn-c-fdb.txt"
    echo "--- after: host A: show evpn mac vni $VNI mac $MAC"
    mac_show 1 | tee "$WORK/evpn-a-after.txt"
    # The type-2 routes for the MAC in C's BGP table, each under its RD.
    evpn_vtysh 3 "show bgp l2vpn evpn route type macip" |
        awk -v mac="$MAC" '/^Route Distinguisher:/ { rd = $3 } index($0, "[" mac "]") { print rd }' \
            >"$WORK/evpn-c-routes.txt"
    echo "--- after: host C: type-2 routes for $MAC, by RD: $(xargs <"$WORK/evpn-c-routes.txt")"
    A_ADVERTISES=no
    advertised_by 1 && A_ADVERTISES=yes
    for role in src tap; do
        "$VNETCTL" --socket "${CTL_OF[$role]}" --json mac list --switch s0 >"$WORK/macs-$role.json" ||
            fail_now "vnetctl mac list on the $role host failed"
    done
fi

# ---- the rest of the stream, from the destination ------------------------------------
wait_until "$STREAM_WAIT" log_has "$WORK/receiver.out" '^(done|error)' ||
    fail_now "the stream from the guest did not end ${STREAM_WAIT}s after the migration"
wait_until "$STREAM_WAIT" log_has "$WORK/sender.out" '^(done|error)' ||
    fail_now "the stream into the guest did not end ${STREAM_WAIT}s after the migration"
wait_until 30 exited "$QEMU_DST" || fail_now "the destination guest did not power off"
stop_pid "$QEMU_DST" TERM 5
QEMU_DST_RC=$?
# The paused source: quit through its monitor.
qmp "$WORK/src.qmp" quit >/dev/null 2>&1
stop_pid "$QEMU_SRC" TERM 10
QEMU_SRC_RC=$?
console_text
stop_pid "$RECEIVER_PID" TERM 5
RECEIVER_RC=$?
stop_pid "$SENDER_PID" TERM 5
SENDER_RC=$?
stop_pid "$RARP_PID" TERM 5

# vnetd's view while it still runs: the MAC table, then its final stats.
for pid in "${VNETD_PIDS[@]}"; do
    running "$pid" || fail "vnetd $pid exited during the migration"
done
"$VNETCTL" --socket "${CTL_OF[dst]}" --json mac list --switch s0 >"$WORK/macs.json" || fail "vnetctl mac list failed"
VNETD_RCS=()
for pid in "${VNETD_PIDS[@]}"; do
    stop_pid "$pid" TERM 10
    VNETD_RCS+=($?)
done

# ---- the checks ---------------------------------------------------------------------------
not() { ! "$@"; }
# guest PREFIX: the rest of the guest's lines "VNET-GUEST PREFIX...", from
# both consoles (the source's first).
guest() { cat "$WORK/console-src.txt" "$WORK/console-dst.txt" | sed -n "s/^VNET-GUEST $1//p"; }
receiver() { sed -n "s/^$1 //p" "$WORK/receiver.out" | tail -n 1; }

check "query-migrate status completed (is $MIG_STATUS)" test "$MIG_STATUS" = completed
check "the source is paused after the migration (status $SRC_STATUS)" test "$SRC_STATUS" = postmigrate
check "the destination runs after the migration (status $DST_STATUS)" test "$DST_STATUS" = running
check "the destination QEMU exited 0 (is $QEMU_DST_RC)" test "$QEMU_DST_RC" = 0
check "the source QEMU exited 0 on quit (is $QEMU_SRC_RC)" test "$QEMU_SRC_RC" = 0
grep -qE '^VNET-GUEST (insmod|no eth0|host .* did not answer)' "$WORK/console-src.txt" &&
    FAILS+=("guest setup: $(grep -E '^VNET-GUEST (insmod|no eth0|host)' "$WORK/console-src.txt")")
# The first half of the guest's report is on the source, the end on the destination.
check "the guest's file size is on the source's console" grep -q '^VNET-GUEST send-size' "$WORK/console-src.txt"
check "the guest finished on the destination" grep -q '^VNET-GUEST done' "$WORK/console-dst.txt"
SEND_SHA=$(guest 'send-sha256 ')
SEND_SIZE=$(guest 'send-size ')
RECV_SHA=$(receiver recv-sha256)
RECV_SIZE=$(receiver recv-bytes)
AFTER=$(receiver bytes-after-fast)
# The stall: the longest gap between two reads that ended after the
# migrate command; the pacing's own gaps: the longest one before it.
read -r STALL_MS STALL_FROM PACING_MS < <(awk -v tm="$T_MIGRATE" '
    $1 == "gap-ms" && $6 > tm && $2 > s { s = $2; from = $4 }
    $1 == "gap-ms" && $6 <= tm && $2 > p { p = $2 }
    END { printf "%d %.3f %d\n", s, from, p }' "$WORK/receiver.out")
check "the receiver ended cleanly (exit $RECEIVER_RC)" test "$RECEIVER_RC" = 0
check "one connection" test "$(grep -c '^accepted' "$WORK/receiver.out")" = 1
check "the guest's stream exit status (is $(guest 'stream-rc '))" test "$(guest 'stream-rc ')" = 0
check "the guest's file is $((DATA_KIB * 1024)) bytes (is ${SEND_SIZE:-missing})" \
    test "$SEND_SIZE" = $((DATA_KIB * 1024))
check "bytes received ${RECV_SIZE:-missing} = bytes sent ${SEND_SIZE:-missing}" \
    test -n "$SEND_SIZE" -a "$RECV_SIZE" = "$SEND_SIZE"
check "sha256 received ${RECV_SHA:-missing} = sha256 sent ${SEND_SHA:-missing}" \
    test -n "$SEND_SHA" -a "$RECV_SHA" = "$SEND_SHA"
check "bytes received after the migration completed (${AFTER:-missing}) > 0" test "${AFTER:-0}" -gt 0
sender() { sed -n "s/^$1 //p" "$WORK/sender.out" | tail -n 1; }
IN_SHA=$(sender sent-sha256)
IN_SIZE=$(sender sent-bytes)
IN_AFTER=$(sender bytes-after-fast)
IN_RECV_SHA=$(guest 'recv-sha256 ')
IN_RECV_SIZE=$(guest 'recv-size ')
check "the sender into the guest ended cleanly (exit $SENDER_RC)" test "$SENDER_RC" = 0
check "the guest's listener exit status (is $(guest 'recv-rc '))" test "$(guest 'recv-rc ')" = 0
check "bytes into the guest: received ${IN_RECV_SIZE:-missing} = sent ${IN_SIZE:-missing}" \
    test "$IN_SIZE" = $((DATA_KIB * 1024)) -a "$IN_RECV_SIZE" = "$IN_SIZE"
check "sha256 into the guest: received ${IN_RECV_SHA:-missing} = sent ${IN_SHA:-missing}" \
    test -n "$IN_SHA" -a "$IN_RECV_SHA" = "$IN_SHA"
check "bytes sent into the guest after the migration completed (${IN_AFTER:-missing}) > 0" \
    test "${IN_AFTER:-0}" -gt 0

for c in rx_errors rx_length_errors rx_frame_errors rx_over_errors rx_crc_errors tx_errors tx_dropped; do
    v=$(guest "eth0 $c ")
    check "guest eth0 $c = 0 on the destination (is ${v:-missing})" test "$v" = 0
done

for role in src dst tap; do
    [ -s "${STATS_OF[$role]}" ] || fail "vnetd wrote no ${STATS_OF[$role]}"
done
read -r SRC_RX SRC_RXB < <(vnetd_stats "${STATS_OF[src]}" src.rx.packets src.rx.bytes)
read -r DST_RX DST_RXB < <(vnetd_stats "${STATS_OF[dst]}" dst.rx.packets dst.rx.bytes)
read -r TAP_TX TAP_TXB < <(vnetd_stats "${STATS_OF[tap]}" "$TAP.tx.packets" "$TAP.tx.bytes")
check "vnetd src port received the guest's frames before ($SRC_RX)" test "${SRC_RX:-0}" -gt 0
check "vnetd dst port received the guest's frames after ($DST_RX)" test "${DST_RX:-0}" -gt 0
# mac_port FILE: the ports a `mac list --json` in FILE has the guest's MAC on.
mac_port() {
    python3 -c '
import json, sys
print(" ".join(e["port"] for e in json.load(open(sys.argv[1])) if e["mac"] == sys.argv[2]) or "none")' \
        "$1" "$MAC"
}
MAC_PORT=$(mac_port "$WORK/macs.json")
check "the switch has $MAC on port dst (has it on: $MAC_PORT)" test "$MAC_PORT" = dst

# The announcement: RARPs from the guest's MAC, after the migration started.
RARPS=$(awk -v mac="$MAC" -v t="$T_MIGRATE" '$1 == "rarp" && $2 > t && $3 == "src=" mac' "$WORK/rarp.out")
check "a RARP from $MAC reached the tap after the migration started" test -n "$RARPS"

check "vnetd logged dirty logging on for port src" \
    grep -qE '\[src\] dirty logging on' "${LOG_OF[src]}"
check "vnetd logged no dirty logging for port dst (the destination does not log)" \
    not grep -qE '\[dst\] dirty logging on' "${LOG_OF[dst]}"
check "vnetd logged SEND_RARP for $MAC on port dst" \
    grep -qE "\[dst\] SEND_RARP: announcing $MAC" "${LOG_OF[dst]}"
for rc in "${VNETD_RCS[@]}"; do
    check "vnetd exited 0 on SIGTERM (is $rc)" test "$rc" = 0
done

if [ -n "$EVPN" ]; then
    check "host C has $MAC behind B's VTEP ${CONVERGE_S} s after the switchover at most (${C_MS:-never} ms)" \
        test -n "$C_MS" -a "${C_MS:-0}" -le $((CONVERGE_S * 1000))
    check "host A stopped advertising $MAC ${CONVERGE_S} s after the switchover at most (${A_MS:-never} ms)" \
        test -n "$A_MS" -a "${A_MS:-0}" -le $((CONVERGE_S * 1000))
    check "host C's zebra has $MAC remote behind B's VTEP $EVPN_NET.2" \
        grep -q "Remote VTEP: $EVPN_NET.2\b" "$WORK/evpn-c-after.txt"
    check "host C's kernel FDB has $MAC dst $EVPN_NET.2 extern_learn" \
        grep -qE "^$MAC dst $EVPN_NET.2 .*extern_learn" "$WORK/evpn-c-fdb.txt"
    check "host A's zebra has $MAC remote behind B's VTEP $EVPN_NET.2" \
        grep -q "Remote VTEP: $EVPN_NET.2\b" "$WORK/evpn-a-after.txt"
    check "host A's vnetd no longer has $MAC as a static entry on vxtap$VNI (has: $A_ADVERTISES)" \
        test "$A_ADVERTISES" = no
    C_ROUTES=$(xargs <"$WORK/evpn-c-routes.txt")
    check "host C's BGP table has one type-2 route for $MAC, B's (RDs: ${C_ROUTES:-none})" \
        eval '[[ "$C_ROUTES" == "$EVPN_NET.2:"* && "$C_ROUTES" != *" "* ]]'
    for role in src tap; do
        p=$(mac_port "$WORK/macs-$role.json")
        check "host ${NAME_OF[${HOST_OF[$role]}]}'s switch has $MAC behind its uplink (has it on: $p)" \
            test "$p" = uplink-s0
    done
fi

# ---- summary ----------------------------------------------------------------------------------
T_END=$(date +%s.%N)
echo "== summary"
awk -v t0="$T0" -v tm="$T_MIGRATE" -v tc="$T_COMPLETED" -v t1="$T_END" 'BEGIN {
    printf "time: total %.1f s; migrate command to completed seen %.1f s\n", t1 - t0, tc - tm }'
echo "QEMU: status $MIG_STATUS, total time $MIG_TOTAL_MS ms, downtime $MIG_DOWNTIME_MS ms," \
    "RAM transferred $MIG_RAM_BYTES bytes"
echo "stream guest -> host: guest sent $SEND_SIZE bytes sha256 $SEND_SHA"
echo "                      host received $RECV_SIZE bytes sha256 $RECV_SHA (${AFTER} after the migration)"
echo "stream host -> guest: host sent $IN_SIZE bytes sha256 $IN_SHA (${IN_AFTER} after the migration)"
echo "                      guest received $IN_RECV_SIZE bytes sha256 $IN_RECV_SHA"
awk -v g="$STALL_MS" -v f="$STALL_FROM" -v p="$PACING_MS" -v tm="$T_MIGRATE" -v tc="$T_COMPLETED" 'BEGIN {
    printf "stall: longest gap between received chunks since the migrate command %d ms" \
        " (from %.2f s after it; completed seen at %.2f s); before it, at the pacing" \
        " (16 KiB every 40 ms), %d ms\n", g, f - tm, tc - tm, p }'
echo "RARPs on the tap:"
echo "${RARPS:-none}" | while read -r line; do echo "  $line"; done
echo "vnetd: src rx $SRC_RX pkts $SRC_RXB B, dst rx $DST_RX pkts $DST_RXB B, tap tx $TAP_TX pkts $TAP_TXB B"
echo "vnetd: $MAC on port $MAC_PORT"
if [ -n "$EVPN" ]; then
    echo "EVPN: host C had $MAC behind B ${C_MS:-never} ms after the switchover," \
        "host A stopped advertising it ${A_MS:-never} ms after it (bound ${CONVERGE_S} s)"
fi
checks_passed
pass
