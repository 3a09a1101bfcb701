#!/bin/bash
# Upgrade in place under a running guest's traffic (docs/USAGE.md "Upgrade
# in place"): a new vnetd takes over the old one's listening socket, tap
# and control socket by fd passing, the old one exits 0, and the guest
# (QEMU, TCG; qemu/guest_init.sh vnet_stream=1) is not rebooted: its two
# checksummed TCP streams, one each way through vnetd's tap in the test's
# network namespace, complete and verify. The tap is not persistent, so
# only the hand-over keeps it (and its address) alive. Each recovery shape
# once:
#   (a) vnetd listens, QEMU connects with reconnect=1; the upgrade by
#       `vnetctl upgrade`. Before it, two upgrades that fail, each with its
#       exact error from vnetctl, and the old vnetd goes on untouched
#       (same pid, no child left, the streams still move, the control
#       socket answers): a binary that exits 1 (/bin/false), and a vnetd
#       given a bad option (a wrapper adding --tx-batch 65), whose own
#       reason comes back through the hand-over socket.
#   (b) QEMU listens (server=on), vnetd --client; the upgrade by SIGUSR2.
# Asserts, in each shape:
#   - the old vnetd (this script's child) exits with status 0; the new one
#     (its child, then init's) runs the same binary, serves: the front end
#     connects to it, `vnetctl` reaches it through the same control socket
#     path, and it forwards both ways (its final stats at SIGTERM)
#   - the tap kept its ifindex; the vhost-user socket file is the same
#     inode (never unlinked and re-made)
#   - the guest: the same QEMU process throughout, one boot, both streams
#     verified (lib/qemu_stream.sh check_streams_verified)
# Printed for the notes: the stall (the longest gap between two reads at
# the receiver after the upgrade started, against the pacing's own gap),
# the hand-over time vnetd reports, and the streams' bytes and hashes.
#
# Usage: test_upgrade_in_place.sh BUILD_DIR   (as root; exit 77 = skipped)
# Environment: VNET_QEMU_KERNEL=/boot/vmlinuz-X (see guest_kernel),
# VNET_QEMU_DATA_KIB=8192 (each stream's size), VNET_KEEP_WORK=1.
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA_KIB=${VNET_QEMU_DATA_KIB:-8192}
# shellcheck disable=SC2034 # MAC: lib/qemu_stream.sh start_qemu
MAC=52:54:00:12:39:01
QEMU_TIMEOUT=300
BOOT_WAIT=180
RESUME_WAIT=30
STREAM_WAIT=60

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
qemu_guest_prerequisites
need_built "$VNETD" "$VNETCTL"

work_dir vnet-upgrade
T0=$(date +%s.%N)
echo "== guest kernel $KVER"
guest_initramfs

# shellcheck source=lib/qemu_stream.sh
. "$HERE/lib/qemu_stream.sh"

# The failed upgrades' binaries: one that exits 1 at once, and the real
# vnetd refusing an option.
BAD_OPTION="$WORK/vnetd-bad-option"
printf '#!/bin/sh\nexec "%s" "$@" --tx-batch 65\n' "$VNETD" >"$BAD_OPTION"
chmod +x "$BAD_OPTION"
BAD_OPTION_REASON=$("$VNETD" --tap vnupg-none --null --tx-batch 65 2>&1 >/dev/null | sed 's/^vnetd: //')
[ -n "$BAD_OPTION_REASON" ] || fail "vnetd --tx-batch 65 did not refuse the option"

# ---- one shape ------------------------------------------------------------------
# Set by run_shape: L, NS, TAP, SOCK, CTL, D, VNETD_PID (the old vnetd),
# NEW_PID, QEMU_PID, RECEIVER_PID, SENDER_PID.

# start_shape_vnetd ARG...: vnetd in NS (its tap is born there, not
# persistent: only the hand-over keeps it), log D-vnetd.log, which the new
# vnetd of the upgrade writes too (it inherits the old one's stderr);
# VNETD_PID.
start_shape_vnetd() {
    start_vnetd "$D-vnetd.log" --netns "$NS" --socket-path "$SOCK" \
        --tap "$TAP" --gro off --stats-file "$D-stats.json" --control-socket "$CTL" \
        --log-level debug "$@"
}

control_answers() { ctl port list >/dev/null; }
tap_ifindex() { ip netns exec "$NS" cat "/sys/class/net/$TAP/ifindex" 2>/dev/null || echo gone; }
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null | tr -s ' \n' ' ' | sed 's/ $//'; }

# failed_upgrade WHAT EXPECTED ARG...: `vnetctl upgrade ARG...` fails with
# exactly EXPECTED, and the old vnetd goes on as before.
failed_upgrade() {
    local what=$1 expected=$2 rc=0 ifindex_before rx_before
    shift 2
    ifindex_before=$(tap_ifindex)
    ctl upgrade "$@" >"$D-upgrade-$what.out" 2>"$D-upgrade-$what.err" || rc=$?
    check "($L) a failed upgrade ($what): vnetctl exits 1 (is $rc)" test "$rc" = 1
    check "($L) a failed upgrade ($what): the error is exactly '$expected' (is '$(cat "$D-upgrade-$what.err")')" \
        test "$(cat "$D-upgrade-$what.err")" = "$expected"
    check "($L) after the failed upgrade ($what) the old vnetd runs" running "$VNETD_PID"
    check "($L) after the failed upgrade ($what) no child of vnetd is left (is '$(children_of "$VNETD_PID")')" \
        test -z "$(children_of "$VNETD_PID")"
    check "($L) after the failed upgrade ($what) the tap keeps ifindex $ifindex_before (is $(tap_ifindex))" \
        test "$(tap_ifindex)" = "$ifindex_before"
    check "($L) after the failed upgrade ($what) the control socket answers" control_answers
    rx_before=$(progress_bytes "$D-receiver.out")
    guest_wait 20 "after the failed upgrade ($what) the guest's stream did not move on" \
        streams_past $((rx_before + 8 * CHUNK)) -1
}

# run_shape LABEL INDEX ROLE: ROLE "server" (vnetd listens, QEMU
# reconnects; upgraded by vnetctl) or "client" (QEMU listens, vnetd
# --client; upgraded by SIGUSR2); INDEX (0, 1) picks the shape's subnet.
run_shape() {
    local role=$3
    shape_begin "$1" "$2" "$role" vnet-upg vnupg 10.83 vnetd.log
    CTL="$D-ctl.sock"
    shape_guest_up "$D-vnetd.log" start_shape_vnetd
    local qemu_before ifindex_before sock_inode_before
    qemu_before=$(qemu_identity)
    ifindex_before=$(tap_ifindex)
    sock_inode_before=$(stat -c %i "$SOCK")

    if [ "$role" = server ]; then
        failed_upgrade exit-1 \
            "vnetctl: upgrade failed, vnetd keeps running: /bin/false exited with status 1 before it was ready" \
            --binary /bin/false
        failed_upgrade bad-option \
            "vnetctl: upgrade failed, vnetd keeps running: $BAD_OPTION: $BAD_OPTION_REASON (exited with status 1)" \
            --binary "$BAD_OPTION"
    fi

    # ---- the upgrade ---------------------------------------------------------------------
    local rx_at tx_at t_upgrade took_over_line
    rx_at=$(progress_bytes "$D-receiver.out")
    tx_at=$(progress_bytes "$D-sender.out")
    t_upgrade=$(_vt_now_us)
    if [ "$role" = server ]; then
        ctl upgrade >"$D-upgrade.out" 2>&1 || fail_now "vnetctl upgrade: $(cat "$D-upgrade.out")"
        echo "($L) $(cat "$D-upgrade.out")"
        check "($L) vnetctl upgrade says who took over" \
            grep -qE "^upgraded: pid [0-9]+ \\($VNETD\\) took over in [0-9]+ ms$" "$D-upgrade.out"
    else
        kill -USR2 "$VNETD_PID"
    fi
    guest_wait 20 "vnetd did not log the take-over" log_has "$D-vnetd.log" "upgrade: pid [0-9]+ took over"
    took_over_line=$(grep -m 1 -oE "upgrade: pid [0-9]+ took over after [0-9]+ ms" "$D-vnetd.log")
    NEW_PID=$(echo "$took_over_line" | awk '{print $3}')
    local handover_ms=${took_over_line##* after }
    on_exit kill -KILL "$NEW_PID"
    wait_until 20 exited "$VNETD_PID" || fail_now "the old vnetd did not exit after the upgrade"
    local old_rc=0
    { wait "$VNETD_PID" || old_rc=$?; } 2>/dev/null
    forget "$VNETD_PID"
    check "($L) the old vnetd exited with status 0 (is $old_rc)" test "$old_rc" = 0
    check "($L) the new vnetd (pid $NEW_PID) runs" kill -0 "$NEW_PID"
    check "($L) the new vnetd runs $VNETD (is $(readlink "/proc/$NEW_PID/exe"))" \
        test "$(readlink "/proc/$NEW_PID/exe")" = "$(readlink -f "$VNETD")"
    check "($L) the tap kept ifindex $ifindex_before (is $(tap_ifindex))" test "$(tap_ifindex)" = "$ifindex_before"
    check "($L) the socket file is the one from before (inode $sock_inode_before, is $(stat -c %i "$SOCK"))" \
        test "$(stat -c %i "$SOCK")" = "$sock_inode_before"
    guest_wait 20 "the front end did not connect to the new vnetd" \
        log_count "$D-vnetd.log" "front end connected" 2
    check "($L) the new vnetd answers on the control socket" control_answers
    check "($L) QEMU after the upgrade is the one from before ($qemu_before, now $(qemu_identity))" \
        test "$(qemu_identity)" = "$qemu_before"

    # ---- the streams move again, then finish unpaced ---------------------------------
    guest_wait "$RESUME_WAIT" "the streams did not resume after the upgrade" \
        streams_past $((rx_at + 16 * CHUNK)) $((tx_at + 16 * CHUNK))
    finish_streams

    # The new vnetd is not this script's child: it is stopped and waited
    # for by its pid, and its final report must be in the log.
    kill -TERM "$NEW_PID"
    wait_until 10 test ! -e "/proc/$NEW_PID" || fail "($L) the new vnetd did not exit on SIGTERM"
    check "($L) the new vnetd wrote its final report (the old one's is the first)" \
        log_count "$D-vnetd.log" "final stats after" 2

    check "($L) QEMU at the streams' end is the one from before the upgrade ($qemu_before, then $QEMU_AT_END)" \
        test "$QEMU_AT_END" = "$qemu_before"
    check_streams_verified "$QEMU_RC" "$RECEIVER_RC" "$SENDER_RC"
    check "($L) guest -> host: bytes after the upgrade (${RECV_SIZE:-0} > $rx_at)" test "${RECV_SIZE:-0}" -gt "$rx_at"
    [ -s "$D-stats.json" ] || fail "($L) the new vnetd wrote no $D-stats.json"
    local vm_rx vm_tx vtap_rx vtap_tx
    read -r vm_rx vm_tx vtap_rx vtap_tx < <(vnetd_stats "$D-stats.json" vm0.rx.packets vm0.tx.packets \
        "$TAP.rx.packets" "$TAP.tx.packets")
    check "($L) the new vnetd forwarded guest -> tap ($vm_rx) and tap -> guest ($vtap_rx)" \
        test "${vm_rx:-0}" -gt 0 -a "${vtap_rx:-0}" -gt 0

    local stall_ms stall_from pacing_ms
    read -r stall_ms stall_from pacing_ms < <(stall_after "$t_upgrade")
    note "($L) vnetd $role, QEMU $CHARDEV, upgrade by $([ "$role" = server ] && echo "vnetctl upgrade" || echo SIGUSR2):"
    note "  hand-over: old pid $VNETD_PID -> new pid $NEW_PID in $handover_ms (vnetd's figure: start of the" \
        "new binary to the old one's release); old exit status $old_rc"
    note "  STALL: ${stall_ms} ms, the longest gap between received chunks since the upgrade" \
        "(starting ${stall_from} s after it); before it, at the pacing (16 KiB every 40 ms), ${pacing_ms} ms"
    note "  guest -> host: sent $SEND_SIZE B sha256 $SEND_SHA; received $RECV_SIZE B sha256 $RECV_SHA"
    note "  host -> guest: sent $IN_SIZE B sha256 $IN_SHA; received $IN_RECV_SIZE B sha256 $IN_RECV_SHA"
    note "  guest: QEMU $qemu_before throughout; boots $BOOTS; eth0 carrier_changes $(guest 'eth0 carrier_changes ')"
    note "  new vnetd: vm0 rx $vm_rx tx $vm_tx, $TAP rx $vtap_rx tx $vtap_tx"
}

run_shape a 0 server
run_shape b 1 client

T_END=$(date +%s.%N)
echo "== summary"
awk -v t0="$T0" -v t1="$T_END" 'BEGIN { printf "time: total %.1f s\n", t1 - t0 }'
printf '%s\n' "${SUMMARY[@]}"
checks_passed
pass "upgrade in place under a guest's streams, both recovery shapes: old exits 0, streams verified"
