# The helpers of the QEMU tests whose TCG guest (qemu/guest_init.sh
# vnet_stream=1) streams checksummed bytes both ways through vnetd while
# vnetd goes away and comes back (test_qemu_restart.sh: SIGKILL and a
# restart; test_upgrade_in_place.sh: an upgrade in place) or across a
# VXLAN tunnel (test_vxlan_qemu.sh). Sourced after
# common.sh and guest_kernel; the test sets QEMU, QEMU_TIMEOUT, GUEST_MB,
# MAC, DATA_KIB, WORK and, per shape, L, D, SOCK, HOST_IP, GUEST_IP, and
# QEMU_PID is set here.
# shellcheck shell=bash

FAILS=()
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    "$@" || FAILS+=("$what")
}
SUMMARY=()
note() { SUMMARY+=("$*"); }

# start_qemu CHARDEV_OPTIONS: the guest, its vhost-user chardev at SOCK with
# CHARDEV_OPTIONS and QEMU_NET_OPTIONS (optional, more virtio-net-pci
# properties, e.g. ",host_mtu=1450"); QEMU_PID. vectors=0: QEMU 7.2 TCG +
# vhost-user + MSI-X segfaults (peer-baselines.md).
start_qemu() {
    bg_start --log "$D-qemu.log" timeout -k 5 "$QEMU_TIMEOUT" "$QEMU" -accel tcg \
        -m "$GUEST_MB" -smp 1 -nodefaults -no-user-config -kernel "$KERNEL" -initrd "$WORK/initrd.gz" \
        -append "console=ttyS0 quiet panic=-1 ipv6.disable=1 vnet_host=$HOST_IP vnet_guest=$GUEST_IP vnet_stream=1 vnet_data_kib=$DATA_KIB" \
        -display none -monitor none -serial "file:$D-console.log" -no-reboot \
        -object "memory-backend-memfd,id=mem,size=${GUEST_MB}M,share=on" -numa node,memdev=mem \
        -chardev "socket,id=chr0,path=$SOCK,$1" \
        -netdev type=vhost-user,id=net0,chardev=chr0 \
        -device "virtio-net-pci,netdev=net0,mac=$MAC,vectors=0,mrg_rxbuf=on,csum=on,guest_csum=on,gso=on,host_tso4=on,guest_tso4=on${QEMU_NET_OPTIONS:-}"
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
