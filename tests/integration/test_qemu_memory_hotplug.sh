#!/bin/bash
# Memory hotplug under a running Linux guest (QEMU, TCG): two pc-dimms on
# memory-backend-memfd (share=on) are added with QMP device_add while the
# guest streams through vnetd, and one is removed again with device_del.
# vnetd (in the test's network namespace) cross-connects the guest's
# vhost-user port to a tap there. The guest (qemu/guest_init.sh
# vnet_stream=1) sends a file of random bytes, paced, to
# lib/stream_receiver.py, and lib/stream_sender.py sends random bytes into
# the guest, paced too. The guest onlines what appears (vnet_online_kernel):
#   dimm K (256 MiB at 4 GiB, blocks 32-33) as online_kernel: ZONE_NORMAL,
#     which the guest's kernel allocations prefer over the boot memory's
#     DMA32, so the RX buffers it posts from then on come from it
#   dimm M (128 MiB at 4.25 GiB, block 34) as online_movable: only movable
#     pages, so the guest can offline it when QEMU asks (ACPI eject)
# Once the stream into the guest has moved on after dimm K was onlined, the
# test reads dimm K's memory from the host (QEMU's memfd, /proc/PID/fd) and
# counts the frames vnetd wrote there: a 12-byte virtio-net header
# (num_buffers 1..64) followed by an Ethernet frame from the tap's MAC to the
# guest's, IPv4 from HOST_IP to GUEST_IP. Only the device writes a header
# and a frame together; the guest's own copies of a frame have no header
# before them. Then device_del of dimm M; after QEMU dropped it, both
# streams finish at full speed.
# Asserts:
#   - vnetd logged ADD_MEM_REG for both DIMMs and REM_MEM_REG for dimm M,
#     and `vnetctl show vm0` listed dimm K and dimm M after the adds and dimm
#     K without dimm M after the removal
#   - the guest onlined blocks 32, 33 (kernel) and 34 (movable), and block
#     34 went away (the guest offlined it and QEMU removed the DIMM:
#     query-memory-devices no longer lists it)
#   - frames vnetd wrote are in dimm K (the count > 0)
#   - both streams: one connection each way, byte counts and sha256 equal at
#     both ends; bytes moved after the removal (vnetd still forwards)
#   - the guest's driver counted no rx/tx errors; no ring broke (vnetd logged
#     no "device broken", no bad_descriptor_chain drop)
#   - vnetd exits 0 on SIGTERM (under ASan: nothing touched a removed region)
#
# Usage: test_qemu_memory_hotplug.sh BUILD_DIR   (as root; exit 77 = skipped)
# Environment: VNET_QEMU_KERNEL=/boot/vmlinuz-X (see guest_kernel),
# VNET_QEMU_DATA_KIB=24576 (each stream's size), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_KIB=${VNET_QEMU_DATA_KIB:-24576}
GUEST_MB=256
MAC=52:54:00:12:39:01
# The DIMMs: guest address, size; the memory blocks (128 MiB) they are.
DIMM_K_ADDR=$((0x100000000))
DIMM_K_MB=256
DIMM_M_ADDR=$((0x110000000))
DIMM_M_MB=128
KERNEL_BLOCKS=32,33
MOVABLE_BLOCK=34
# Bounds (s): QEMU's whole run; the boot until the streams run; a DIMM
# seen by vnetd and onlined by the guest; the stream moving after it; the
# removal; the streams' end.
QEMU_TIMEOUT=540
BOOT_WAIT=300
ADD_WAIT=30
TRAFFIC_WAIT=60
REMOVE_WAIT=60
STREAM_WAIT=60

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
qemu_guest_prerequisites
need_built "$VNETD" "$VNETCTL"

work_dir vnet-qemu-memhp
NS=$(ns_name vnet-memhp)
TAP=$(link_name vnmhp)
SOCK="$WORK/vm.sock"
CTL="$WORK/ctl.sock"
STATS="$WORK/stats.json"
QMP="$WORK/qmp.sock"
NET=10.83.$((VT_ID % 250))
HOST_IP=$NET.1
GUEST_IP=$NET.2
L=memhp
D="$WORK/vm"
T0=$(date +%s.%N)
fail_log "$WORK/vnetd.log" 40
for f in qemu.log console.txt receiver.out sender.out; do
    fail_log "$D-$f" 30
done

echo "== guest kernel $KVER; netns $NS, tap $TAP, host $HOST_IP, guest $GUEST_IP ($MAC)"
guest_initramfs
netns_new "$NS"
ip -n "$NS" link set lo up

# shellcheck source=lib/qemu_stream.sh
. "$HERE/lib/qemu_stream.sh"
qmp() { python3 "$HERE/lib/qmp.py" "$QMP" "$@"; }
console_has() {
    console_text
    grep -qE -- "$1" "$D-console.txt"
}
# show_regions: "ADDR:SIZE ..." of vm0's memory regions (vnetctl show --json).
show_regions() {
    "$VNETCTL" --socket "$CTL" --json show vm0 | python3 -c '
import json, sys
def regions(o):  # the "memory" list, wherever the device is in the answer
    if isinstance(o, dict):
        m = o.get("memory")
        if isinstance(m, list):
            return m
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = regions(v)
            if r is not None:
                return r
    return None
print(" ".join("%#x:%#x" % (r["guest_phys_addr"], r["size"]) for r in regions(json.load(sys.stdin)) or []))'
}
# memory_devices: the ids QEMU lists (query-memory-devices).
memory_devices() {
    qmp query-memory-devices | python3 -c '
import json, sys
print(" ".join(d["data"].get("id", "?") for d in json.load(sys.stdin)))'
}

# ---- vnetd, the receiver, QEMU ---------------------------------------------------------
start_receiver "$NS"
start_vnetd "$WORK/vnetd.log" --netns "$NS" --socket-path "$SOCK" --tap "$TAP" \
    --stats-file "$STATS" --control-socket "$CTL" --log-level debug
wait_for 10 "vnetd did not listen" log_has "$WORK/vnetd.log" "listening on $SOCK"
# slots/maxmem: room for the DIMMs; all guest RAM on shared memfds, or vnetd
# could not map it. memhp_default_state=offline: guest_init.sh picks each
# block's zone.
guest_command --mb "$GUEST_MB" --mem-opts ",slots=4,maxmem=1G" --console "$D-console.log" \
    --socket "$SOCK" --mac "$MAC" \
    --append "memhp_default_state=offline vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_stream=1 vnet_data_kib=$DATA_KIB vnet_online_kernel=$KERNEL_BLOCKS" \
    -- -qmp "unix:$QMP,server=on,wait=off"
bg_start --log "$D-qemu.log" timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}"
QEMU_PID=$BG_PID
guest_wait 20 "the front end did not connect" log_has "$WORK/vnetd.log" "front end connected"
guest_wait 10 "vnetd did not open tap $TAP" log_has "$WORK/vnetd.log" "\[tap '$TAP'\] opened"
ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "ip addr add"
ip -n "$NS" link set "$TAP" up || fail "ip link set $TAP up"
TAP_MAC=$(ip netns exec "$NS" cat "/sys/class/net/$TAP/address")

guest_wait "$BOOT_WAIT" "the guest's stream did not start" streams_past $((8 * CHUNK)) -1
start_sender "$NS"
REGIONS_BOOT=$(show_regions)
echo "streams running; vnetd's regions at boot: $REGIONS_BOOT"

# ---- device_add ---------------------------------------------------------------------------
# dimm_add ID ADDR MB: object-add + device_add of a pc-dimm at ADDR.
dimm_add() {
    qmp object-add "{\"qom-type\": \"memory-backend-memfd\", \"id\": \"mem-$1\", \"size\": $(($3 << 20)), \"share\": true}" \
        >"$WORK/add-$1.out" 2>&1 || fail_now "object-add mem-$1: $(cat "$WORK/add-$1.out")"
    qmp device_add "{\"driver\": \"pc-dimm\", \"id\": \"$1\", \"memdev\": \"mem-$1\", \"addr\": $2}" \
        >>"$WORK/add-$1.out" 2>&1 || fail_now "device_add $1: $(cat "$WORK/add-$1.out")"
}
echo "== device_add dimm-k (${DIMM_K_MB} MiB at $(printf %#x $DIMM_K_ADDR)), dimm-m (${DIMM_M_MB} MiB at $(printf %#x $DIMM_M_ADDR))"
dimm_add dimm-k $DIMM_K_ADDR $DIMM_K_MB
dimm_add dimm-m $DIMM_M_ADDR $DIMM_M_MB
ADD_K_LINE="ADD_MEM_REG: guest $(printf %#x $DIMM_K_ADDR) size $(printf %#x $((DIMM_K_MB << 20)))"
ADD_M_LINE="ADD_MEM_REG: guest $(printf %#x $DIMM_M_ADDR) size $(printf %#x $((DIMM_M_MB << 20)))"
REM_M_LINE="REM_MEM_REG: guest $(printf %#x $DIMM_M_ADDR) size $(printf %#x $((DIMM_M_MB << 20)))"
guest_wait "$ADD_WAIT" "vnetd did not log $ADD_K_LINE" log_has "$WORK/vnetd.log" "$ADD_K_LINE"
guest_wait "$ADD_WAIT" "vnetd did not log $ADD_M_LINE" log_has "$WORK/vnetd.log" "$ADD_M_LINE"
REGIONS_ADDED=$(show_regions)
echo "vnetd's regions after the adds: $REGIONS_ADDED"
for b in ${KERNEL_BLOCKS//,/ }; do
    guest_wait "$ADD_WAIT" "the guest did not online memory$b" console_has "^VNET-GUEST online memory$b "
done
guest_wait "$ADD_WAIT" "the guest did not online memory$MOVABLE_BLOCK" \
    console_has "^VNET-GUEST online memory$MOVABLE_BLOCK "
T_ONLINE=$(date +%s.%N)

# ---- traffic through dimm K -----------------------------------------------------------------
# dimm_frames MB: frames vnetd wrote into the guest memory of that size
# (QEMU's memfds, told apart by size), as described in the header.
dimm_frames() {
    local qemu_pid
    qemu_pid=$(cat "/proc/$QEMU_PID/task/$QEMU_PID/children" 2>/dev/null)
    qemu_pid=${qemu_pid%% *}
    python3 - "$qemu_pid" $(($1 << 20)) "$MAC" "$TAP_MAC" "$HOST_IP" "$GUEST_IP" <<'EOF'
import mmap, os, socket, sys
pid, size, gmac, tmac, hip, gip = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
frame = (bytes.fromhex(gmac.replace(":", "")) + bytes.fromhex(tmac.replace(":", "")) + b"\x08\x00")
ip_addrs = socket.inet_aton(hip) + socket.inet_aton(gip)
count = 0
for fd in os.listdir(f"/proc/{pid}/fd"):
    path = f"/proc/{pid}/fd/{fd}"
    try:
        if not os.readlink(path).startswith("/memfd:") or os.stat(path).st_size != size:
            continue
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ)
    except OSError:
        continue
    i = m.find(frame)
    while i >= 0:
        hdr = m[i - 12:i] if i >= 12 else b""
        num_buffers = int.from_bytes(hdr[10:12], "little") if hdr else 0
        if (hdr and hdr[0] <= 7 and 1 <= num_buffers <= 64 and m[i + 14] == 0x45 and
                m[i + 26:i + 34] == ip_addrs):
            count += 1
        i = m.find(frame, i + 1)
print(count)
EOF
}
SENT_AT_ONLINE=$(progress_bytes "$D-sender.out")
frames_in_dimm_k() {
    running "$QEMU_PID" || fail_now "QEMU exited while the streams ran"
    [ "$(progress_bytes "$D-sender.out")" -gt $((SENT_AT_ONLINE + 64 * CHUNK)) ] || return 1
    FRAMES_K=$(dimm_frames "$DIMM_K_MB")
    [ "${FRAMES_K:-0}" -gt 0 ]
}
FRAMES_K=0
guest_wait "$TRAFFIC_WAIT" "no frame written by vnetd found in dimm-k" frames_in_dimm_k
echo "frames vnetd wrote into dimm-k: $FRAMES_K"

# ---- device_del of dimm M -------------------------------------------------------------------
echo "== device_del dimm-m"
T_DEL=$(date +%s.%N)
qmp device_del '{"id": "dimm-m"}' >"$WORK/del.out" 2>&1 || fail_now "device_del dimm-m: $(cat "$WORK/del.out")"
dimm_m_gone() { ! memory_devices | grep -qw dimm-m; }
guest_wait "$REMOVE_WAIT" "QEMU still lists dimm-m (the guest did not eject it)" dimm_m_gone
guest_wait 10 "vnetd did not log $REM_M_LINE" log_has "$WORK/vnetd.log" "$REM_M_LINE"
T_REMOVED=$(date +%s.%N)
REGIONS_REMOVED=$(show_regions)
echo "vnetd's regions after the removal: $REGIONS_REMOVED (QEMU's memory devices: $(memory_devices))"
# vnetd forwards after the removal: the streams move on, then finish fast.
RX_AT_DEL=$(progress_bytes "$D-receiver.out")
TX_AT_DEL=$(progress_bytes "$D-sender.out")
guest_wait 30 "the streams did not move after the removal" \
    streams_past $((RX_AT_DEL + 4 * CHUNK)) $((TX_AT_DEL + 4 * CHUNK))
finish_streams
running "$VNETD_PID" || fail "vnetd exited during the test"
stop_pid "$VNETD_PID" TERM 10
VNETD_RC=$?

# ---- the checks ---------------------------------------------------------------------------------
not() { ! "$@"; }
receiver() { sed -n "s/^$1 //p" "$D-receiver.out" | tail -n 1; }
sender() { sed -n "s/^$1 //p" "$D-sender.out" | tail -n 1; }
has_region() { [[ " $1 " == *" $(printf %#x "$2"):$(printf %#x $(($3 << 20))) "* ]]; }

check "vnetd logged '$ADD_K_LINE'" log_has "$WORK/vnetd.log" "$ADD_K_LINE"
check "vnetd logged '$ADD_M_LINE'" log_has "$WORK/vnetd.log" "$ADD_M_LINE"
check "vnetd logged '$REM_M_LINE'" log_has "$WORK/vnetd.log" "$REM_M_LINE"
check "vnetctl show listed dimm-k after the adds ($REGIONS_ADDED)" has_region "$REGIONS_ADDED" $DIMM_K_ADDR $DIMM_K_MB
check "vnetctl show listed dimm-m after the adds ($REGIONS_ADDED)" has_region "$REGIONS_ADDED" $DIMM_M_ADDR $DIMM_M_MB
check "vnetctl show lists dimm-k after the removal ($REGIONS_REMOVED)" \
    has_region "$REGIONS_REMOVED" $DIMM_K_ADDR $DIMM_K_MB
check "vnetctl show no longer lists dimm-m ($REGIONS_REMOVED)" \
    not has_region "$REGIONS_REMOVED" $DIMM_M_ADDR $DIMM_M_MB
for b in ${KERNEL_BLOCKS//,/ }; do
    check "the guest onlined memory$b as online_kernel ($(guest "online memory$b "))" \
        test "$(guest "online memory$b ")" = "online_kernel 0 "
done
check "the guest onlined memory$MOVABLE_BLOCK as online_movable ($(guest "online memory$MOVABLE_BLOCK "))" \
    test "$(guest "online memory$MOVABLE_BLOCK ")" = "online_movable 0 "
check "memory$MOVABLE_BLOCK went away in the guest" grep -q "^VNET-GUEST gone memory$MOVABLE_BLOCK\$" "$D-console.txt"
check "frames vnetd wrote are in dimm-k ($FRAMES_K)" test "${FRAMES_K:-0}" -gt 0
check "the guest finished" grep -q '^VNET-GUEST done' "$D-console.txt"
check "QEMU exited 0 (is $QEMU_RC)" test "$QEMU_RC" = 0

SEND_SHA=$(guest 'send-sha256 ')
SEND_SIZE=$(guest 'send-size ')
RECV_SHA=$(receiver recv-sha256)
RECV_SIZE=$(receiver recv-bytes)
check "the receiver ended cleanly (exit $RECEIVER_RC)" test "$RECEIVER_RC" = 0
check "one connection from the guest" test "$(grep -c '^accepted' "$D-receiver.out")" = 1
check "the guest's stream exit status (is $(guest 'stream-rc '))" test "$(guest 'stream-rc ')" = 0
check "bytes from the guest: received ${RECV_SIZE:-missing} = sent ${SEND_SIZE:-missing}" \
    test "$SEND_SIZE" = $((DATA_KIB * 1024)) -a "$RECV_SIZE" = "$SEND_SIZE"
check "sha256 from the guest: received ${RECV_SHA:-missing} = sent ${SEND_SHA:-missing}" \
    test -n "$SEND_SHA" -a "$RECV_SHA" = "$SEND_SHA"
IN_SHA=$(sender sent-sha256)
IN_SIZE=$(sender sent-bytes)
IN_RECV_SHA=$(guest 'recv-sha256 ')
IN_RECV_SIZE=$(guest 'recv-size ')
check "the sender ended cleanly (exit $SENDER_RC)" test "$SENDER_RC" = 0
check "the guest's listener exit status (is $(guest 'recv-rc '))" test "$(guest 'recv-rc ')" = 0
check "bytes into the guest: received ${IN_RECV_SIZE:-missing} = sent ${IN_SIZE:-missing}" \
    test "$IN_SIZE" = $((DATA_KIB * 1024)) -a "$IN_RECV_SIZE" = "$IN_SIZE"
check "sha256 into the guest: received ${IN_RECV_SHA:-missing} = sent ${IN_SHA:-missing}" \
    test -n "$IN_SHA" -a "$IN_RECV_SHA" = "$IN_SHA"
for c in rx_errors rx_length_errors rx_frame_errors rx_over_errors rx_crc_errors tx_errors tx_dropped; do
    v=$(guest "eth0 $c ")
    check "guest eth0 $c = 0 (is ${v:-missing})" test "$v" = 0
done
check "vnetd logged no broken device" not grep -q "device broken" "$WORK/vnetd.log"
[ -s "$STATS" ] || fail "vnetd wrote no $STATS"
read -r VM_RX VM_TX < <(vnetd_stats "$STATS" vm0.rx.packets vm0.tx.packets)
BAD=$(python3 -c '
import json, sys
print(sum(q[d]["drops"].get("bad_descriptor_chain", 0) for p in json.load(open(sys.argv[1]))["ports"]
          if p["name"] == "vm0" for q in p["queues"] for d in ("rx", "tx")))' "$STATS")
check "vnetd counted no bad_descriptor_chain (is ${BAD:-missing})" test "${BAD:-0}" = 0
check "vnetd exited 0 on SIGTERM (is $VNETD_RC)" test "$VNETD_RC" = 0

# ---- summary ----------------------------------------------------------------------------------------
T_END=$(date +%s.%N)
echo "== summary"
awk -v t0="$T0" -v to="$T_ONLINE" -v td="$T_DEL" -v tr="$T_REMOVED" -v t1="$T_END" 'BEGIN {
    printf "time: total %.1f s; DIMMs onlined at %.1f s; device_del to REM_MEM_REG seen %.1f s\n",
        t1 - t0, to - t0, tr - td }'
echo "vnetd's regions: boot [$REGIONS_BOOT] after the adds [$REGIONS_ADDED] after the removal [$REGIONS_REMOVED]"
echo "vnetd's log:"
grep -E 'ADD_MEM_REG|REM_MEM_REG' "$WORK/vnetd.log" | sed 's/^/  /'
echo "guest:"
grep -E '^VNET-GUEST (memory|online|gone)' "$D-console.txt" | sed 's/^/  /'
echo "frames vnetd wrote into dimm-k: $FRAMES_K"
echo "stream guest -> host: $SEND_SIZE bytes sha256 $SEND_SHA; received $RECV_SIZE sha256 $RECV_SHA"
echo "stream host -> guest: $IN_SIZE bytes sha256 $IN_SHA; received $IN_RECV_SIZE sha256 $IN_RECV_SHA"
echo "vnetd: vm0 rx $VM_RX tx $VM_TX packets"
checks_passed
pass
