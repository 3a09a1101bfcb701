# The helpers of the QEMU tests whose TCG guest (qemu/guest_init.sh
# vnet_stream=1) streams checksummed bytes both ways through vnetd while
# vnetd goes away and comes back (test_qemu_restart.sh: SIGKILL and a
# restart; test_upgrade_in_place.sh: an upgrade in place), across a
# VXLAN tunnel (test_vxlan_qemu.sh) or while its memory is hot-plugged
# (test_qemu_memory_hotplug.sh). Sourced after
# common.sh, qemu_guest_prerequisites and guest_initramfs; the test sets
# QEMU_TIMEOUT, MAC, DATA_KIB, STREAM_WAIT, maybe GUEST_MB (and BOOT_WAIT
# for shape_guest_up) and, per guest, L, D, SOCK, HOST_IP, GUEST_IP (or
# has shape_begin set them); QEMU_PID, RECEIVER_PID, SENDER_PID are set
# here.
# shellcheck shell=bash

# The streams' pacing (stream_sender.py, stream_receiver.py and the
# guest's): one CHUNK of bytes every 40 ms, until SIGUSR1.
CHUNK=16384
# The guest's memory, MiB, unless the test sets it.
GUEST_MB=${GUEST_MB:-192}

SUMMARY=()
note() { SUMMARY+=("$*"); }

# start_qemu CHARDEV_OPTIONS: the guest (guest_command), its vhost-user
# chardev at SOCK with CHARDEV_OPTIONS and QEMU_NET_OPTIONS (optional, more
# virtio-net-pci properties, e.g. ",host_mtu=1450"); QEMU_PID.
start_qemu() {
    guest_command --mb "$GUEST_MB" --console "$D-console.log" --socket "$SOCK" --chardev-opts ",$1" \
        --mac "$MAC" --net-opts "${QEMU_NET_OPTIONS:-}" \
        --append "vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_stream=1 vnet_data_kib=$DATA_KIB"
    # shellcheck disable=SC2153 # GUEST_CMD: set by guest_command
    bg_start --log "$D-qemu.log" timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}"
    QEMU_PID=$BG_PID
}

# qemu_identity: "PID STARTTIME" of QEMU itself (timeout's child), or "gone".
qemu_identity() {
    local child stat
    child=$(cat "/proc/$QEMU_PID/task/$QEMU_PID/children" 2>/dev/null)
    child=${child%% *}
    stat=$(cat "/proc/$child/stat" 2>/dev/null) || {
        echo gone
        return
    }
    read -r -a f <<<"${stat##*) }"
    echo "$child ${f[19]}" # field 22 of stat, the start time in clock ticks
}

console_text() { tr -d '\r' <"$D-console.log" >"$D-console.txt" 2>/dev/null; }
fail_now() {
    console_text
    fail "($L) $*"
}
# guest_wait SECONDS MESSAGE CMD...: wait_for, with the guest's console
# made readable for the failure's logs.
guest_wait() {
    local secs=$1 msg=$2
    shift 2
    wait_until "$secs" "$@" || fail_now "$msg (waited $secs s for: $*)"
}

# progress_bytes FILE: the bytes of the last "progress TIME BYTES" line (0
# before there is one, or a FILE).
progress_bytes() { awk '$1 == "progress" { b = $3 } END { print b + 0 }' "$1" 2>/dev/null || echo 0; }
# streams_past R S: the receiver has more than R bytes and the sender has
# sent more than S; both (and QEMU) still run.
streams_past() {
    running "$QEMU_PID" || fail_now "QEMU exited while the streams ran"
    [ "$(progress_bytes "$D-receiver.out")" -gt "$1" ] && [ "$(progress_bytes "$D-sender.out")" -gt "$2" ]
}
# log_time_us FILE ERE: the time of FILE's first line matching ERE (vnetd's
# log: local time to the millisecond), in microseconds since the epoch.
log_time_us() {
    local ts
    ts=$(grep -m 1 -E -- "$2" "$1" | cut -d ' ' -f 1)
    [ -n "$ts" ] && date -d "$ts" +%s%6N
}
# ms_since T_US T2_US: (T2 - T) in ms, "?" without T2.
ms_since() { [ -n "$2" ] && echo $((($2 - $1) / 1000)) || echo "?"; }

# check_streams_verified QEMU_RC RECEIVER_RC SENDER_RC: (after the guest
# powered off and console_text) both streams ended, with one connection
# each way, their byte counts and sha256 equal at both ends; the guest
# booted once, finished its script and counted no eth0 errors; QEMU exited
# 0. Adds to FAILS; sets SEND_SHA SEND_SIZE RECV_SHA RECV_SIZE IN_SHA
# IN_SIZE IN_RECV_SHA IN_RECV_SIZE BOOTS for the notes.
guest() { sed -n "s/^VNET-GUEST $1//p" "$D-console.txt"; }
check_streams_verified() {
    local qemu_rc=$1 receiver_rc=$2 sender_rc=$3
    from() { sed -n "s/^$2 //p" "$1" | tail -n 1; }
    grep -qE '^VNET-GUEST (insmod|no eth0|host .* did not answer)' "$D-console.txt" &&
        FAILS+=("($L) guest setup: $(grep -E '^VNET-GUEST (insmod|no eth0|host)' "$D-console.txt")")
    check "($L) QEMU exited 0 at the guest's power-off (is $qemu_rc)" test "$qemu_rc" = 0
    BOOTS=$(grep -c '^VNET-GUEST boot ok' "$D-console.txt")
    check "($L) the guest booted once (boot markers: $BOOTS)" test "$BOOTS" = 1
    check "($L) the guest finished its script" grep -q '^VNET-GUEST done' "$D-console.txt"
    SEND_SHA=$(guest 'send-sha256 ')
    SEND_SIZE=$(guest 'send-size ')
    RECV_SHA=$(from "$D-receiver.out" recv-sha256)
    RECV_SIZE=$(from "$D-receiver.out" recv-bytes)
    IN_SHA=$(from "$D-sender.out" sent-sha256)
    IN_SIZE=$(from "$D-sender.out" sent-bytes)
    IN_RECV_SHA=$(guest 'recv-sha256 ')
    IN_RECV_SIZE=$(guest 'recv-size ')
    check "($L) the receiver ended cleanly (exit $receiver_rc)" test "$receiver_rc" = 0
    check "($L) the sender ended cleanly (exit $sender_rc)" test "$sender_rc" = 0
    check "($L) one connection from the guest" test "$(grep -c '^accepted' "$D-receiver.out")" = 1
    check "($L) the guest's stream exit status (is $(guest 'stream-rc '))" test "$(guest 'stream-rc ')" = 0
    check "($L) the guest's listener exit status (is $(guest 'recv-rc '))" test "$(guest 'recv-rc ')" = 0
    check "($L) guest -> host: ${DATA_KIB} KiB sent (is ${SEND_SIZE:-missing}), received ${RECV_SIZE:-missing}" \
        test "$SEND_SIZE" = $((DATA_KIB * 1024)) -a "$RECV_SIZE" = "$SEND_SIZE"
    check "($L) guest -> host: sha256 received ${RECV_SHA:-missing} = sent ${SEND_SHA:-missing}" \
        test -n "$SEND_SHA" -a "$RECV_SHA" = "$SEND_SHA"
    check "($L) host -> guest: ${DATA_KIB} KiB sent (is ${IN_SIZE:-missing}), received ${IN_RECV_SIZE:-missing}" \
        test "$IN_SIZE" = $((DATA_KIB * 1024)) -a "$IN_RECV_SIZE" = "$IN_SIZE"
    check "($L) host -> guest: sha256 received ${IN_RECV_SHA:-missing} = sent ${IN_SHA:-missing}" \
        test -n "$IN_SHA" -a "$IN_RECV_SHA" = "$IN_SHA"
    local c v
    for c in rx_errors rx_length_errors rx_frame_errors rx_over_errors rx_crc_errors tx_errors tx_dropped; do
        v=$(guest "eth0 $c ")
        check "($L) guest eth0 $c = 0 (is ${v:-missing})" test "$v" = 0
    done
}

# start_receiver NS: lib/stream_receiver.py in NS on port 5300 (any
# address), until it listens; RECEIVER_PID.
start_receiver() {
    bg_start --out "$D-receiver.out" --err "$D-receiver.err" \
        ip netns exec "$1" python3 -u "$_VT_LIB/stream_receiver.py" 0.0.0.0 5300 $((QEMU_TIMEOUT - 20))
    RECEIVER_PID=$BG_PID
    wait_for 10 "($L) the receiver did not listen" log_has "$D-receiver.out" '^listening'
}

# start_sender NS: (once the guest's stream runs) lib/stream_sender.py in
# NS sends DATA_KIB KiB to the guest's port 5301, until it has sent 8
# chunks (CHUNK bytes) and the guest's stream still moves; SENDER_PID.
start_sender() {
    bg_start --out "$D-sender.out" --err "$D-sender.err" \
        ip netns exec "$1" python3 -u "$_VT_LIB/stream_sender.py" "$GUEST_IP" 5301 $((DATA_KIB * 1024)) \
        $((QEMU_TIMEOUT - 40))
    SENDER_PID=$BG_PID
    guest_wait 30 "the stream into the guest did not start" streams_past $((8 * CHUNK)) $((8 * CHUNK))
}

# finish_streams: both ends stop pacing (SIGUSR1), both streams end (within
# STREAM_WAIT s), the guest powers off (30 s); QEMU, the receiver and the
# sender are reaped and the console made readable. Sets QEMU_AT_END
# (qemu_identity before the power-off), QEMU_RC, RECEIVER_RC, SENDER_RC.
finish_streams() {
    kill -USR1 "$RECEIVER_PID" "$SENDER_PID"
    wait_until "$STREAM_WAIT" log_has "$D-receiver.out" '^(done|error)' ||
        fail_now "the stream from the guest did not end"
    wait_until "$STREAM_WAIT" log_has "$D-sender.out" '^(done|error)' ||
        fail_now "the stream into the guest did not end"
    QEMU_AT_END=$(qemu_identity)
    wait_until 30 exited "$QEMU_PID" || fail_now "the guest did not power off"
    stop_pid "$QEMU_PID" TERM 5
    QEMU_RC=$?
    console_text
    stop_pid "$RECEIVER_PID" TERM 5
    RECEIVER_RC=$?
    stop_pid "$SENDER_PID" TERM 5
    SENDER_RC=$?
}

# ---- the two recovery shapes of test_qemu_restart.sh and test_upgrade_in_place.sh

# shape_begin LABEL INDEX ROLE NS_PREFIX TAP_PREFIX NET16 VNETD_LOG...: one
# shape's names, set for the helpers: L=LABEL, NS (NS_PREFIX, made, lo up),
# TAP (TAP_PREFIX), D=WORK/LABEL (its files), SOCK=D.sock, HOST_IP and
# GUEST_IP in NET16.X.0/24 (X from the pid and INDEX, 0 or 1); for ROLE
# "server" (vnetd listens, QEMU reconnects) or "client" (QEMU listens, vnetd
# --client): ROLE_ARGS (vnetd's), PORT_LINE (vnetd's log line for its
# port), CHARDEV (QEMU's chardev options). The logs shown at a failure: the
# VNETD_LOGs (names under D-), QEMU's, the console, the two streams.
shape_begin() {
    L=$1
    local role=$3 net=$6.$((VT_ID % 125 * 2 + $2)) f
    NS=$(ns_name "$4" "$L")
    TAP=$(link_name "$5" "$L")
    shift 6
    D="$WORK/$L"
    SOCK="$D.sock"
    HOST_IP=$net.1
    GUEST_IP=$net.2
    if [ "$role" = server ]; then
        ROLE_ARGS=()
        PORT_LINE="port vm0: listening on $SOCK"
        CHARDEV="reconnect=1"
    else
        ROLE_ARGS=(--client)
        PORT_LINE="port vm0: connecting to $SOCK"
        CHARDEV="server=on,wait=off"
    fi
    for f in "$@" qemu.log console.txt receiver.out sender.out; do
        fail_log "$D-$f" 25
    done
    echo "== ($L) vnetd $role, QEMU -chardev socket,$CHARDEV; netns $NS, tap $TAP, host $HOST_IP, guest $GUEST_IP"
    netns_new "$NS"
}

# shape_guest_up VNETD_LOG START_VNETD...: the shape running: the receiver
# listens; vnetd (`START_VNETD... ROLE_ARGS...`, logging to VNETD_LOG) and
# QEMU start, whichever listens first; the front end connects, vnetd opens
# TAP, which gets HOST_IP; the guest's stream and then the sender's run,
# paced (BOOT_WAIT s for the guest's).
shape_guest_up() {
    local log=$1
    shift
    ip -n "$NS" link set lo up
    # The receiver listens on any address: the tap that gets HOST_IP does
    # not exist yet, and the guest connects as soon as it answers a ping.
    start_receiver "$NS"
    if [ ${#ROLE_ARGS[@]} = 0 ]; then
        "$@"
        wait_for 10 "($L) vnetd did not listen" log_has "$log" "$PORT_LINE"
        start_qemu "$CHARDEV"
    else
        start_qemu "$CHARDEV"
        guest_wait 20 "QEMU did not listen on $SOCK" test -S "$SOCK"
        "$@" "${ROLE_ARGS[@]}"
    fi
    guest_wait 20 "the front end did not connect to vnetd" log_has "$log" "front end connected"
    guest_wait 10 "vnetd did not open tap $TAP" log_has "$log" "\[tap '$TAP'\] opened"
    ip -n "$NS" addr add "$HOST_IP/24" dev "$TAP" || fail "($L) ip addr add"
    ip -n "$NS" link set "$TAP" up || fail "($L) ip link set $TAP up"
    guest_wait "$BOOT_WAIT" "the guest's stream did not start" streams_past $((8 * CHUNK)) -1
    start_sender "$NS"
}

# stall_after T_US: "MS FROM PACING": the receiver's longest gap between two
# reads that started after T_US (epoch microseconds), when it started (s
# after T_US), and the longest gap before T_US (the pacing's own).
stall_after() {
    local t_s
    t_s=$(awk -v t="$1" 'BEGIN { printf "%.6f", t / 1e6 }')
    awk -v tk="$t_s" '
        $1 == "gap-ms" && $6 > tk && $2 > s { s = $2; from = $4 }
        $1 == "gap-ms" && $6 <= tk && $2 > p { p = $2 }
        END { printf "%d %.3f %d\n", s, from - tk, p }' "$D-receiver.out"
}
