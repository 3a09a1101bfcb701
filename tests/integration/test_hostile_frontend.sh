#!/usr/bin/env bash
# Hostile front ends against vnetd (reference/hostile-input-rules.md).
#
# vnetd runs two cross-connects on one worker: vmA <-> tapA and vmB <-> tapB,
# each tap up in its own network namespace. vnet-pktgen sends into vmB for
# the whole run, while vnet-hostile (tests/integration/tools) runs one named
# attack at a time against vmA's socket. After each attack:
#   - vnetd is still running;
#   - pair B still forwards: vmB rx packets in the stats JSON and tapB
#     rx_packets in its netns keep increasing;
#   - vnetd's fd count is back to exactly its baseline;
#   - vnetd's log has the one-line named error for that attack;
#   - vnet-hostile exited 0 (it saw nothing a front end must never see).
# At the end a well-behaved vnet-pktgen on vmA's socket moves packets again.
# No sanitizer report may appear in vnetd's log (run it against a
# -DVNET_SANITIZE=ON build too: rule 8).
#
# One attack per rule of hostile-input-rules.md at least (vnet-hostile --list
# says which); attacks with variants run each on a fresh connection.
#
# Usage: test_hostile_frontend.sh BUILD_DIR [ATTACK...]   (root; exit 77 = skipped)
#   HOSTILE_SHRINK_ROUNDS (default 5): rounds per shrink-memfd variant.
#   VNET_KEEP_WORK=1 (or KEEP_WORK=1) keeps the work directory (vnetd log,
#   one log per attack).
set -uo pipefail

build=${1:?usage: test_hostile_frontend.sh BUILD_DIR [ATTACK...]}
shift
vnetd_bin=$build/apps/vnetd
pktgen_bin=$build/apps/vnet-pktgen
hostile_bin=$build/tests/integration/tools/vnet-hostile
shrink_rounds=${HOSTILE_SHRINK_ROUNDS:-5}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/common.sh
. "$here/lib/common.sh"
[[ $(id -u) == 0 ]] || skip "needs root (network namespaces, taps)"
for bin in "$vnetd_bin" "$pktgen_bin" "$hostile_bin"; do
    [[ -x $bin ]] || fail "$bin is not built"
done

work_dir test_hostile_frontend
work=$WORK
ns_a=$(ns_name vhA)
ns_b=$(ns_name vhB)
tap_a=$(link_name vhtA)
tap_b=$(link_name vhtB)
sock_a=$work/vmA.sock
sock_b=$work/vmB.sock
stats=$work/stats.json
log=$work/vnetd.log
vnetd_pid=""
fail_log "$log" 40
fail_log "$work/pktgen_b.log" 5

# ---- observations --------------------------------------------------------------

vnetd_alive() { running "$vnetd_pid"; }

# The steady fd count: the least of several samples (the stats writer opens
# its file for a moment every second).
steady_fd_count() {
    local min=999999 n
    for _ in $(seq 10); do
        n=$(fd_count "$vnetd_pid")
        ((n < min)) && min=$n
        sleep 0.1
    done
    echo "$min"
}

# Waits (up to 10 s) for the fd count to equal the baseline exactly.
settle_fds() {
    local n
    for _ in $(seq 100); do
        n=$(fd_count "$vnetd_pid")
        [[ $n == "$baseline_fds" ]] && {
            echo "$n"
            return 0
        }
        sleep 0.1
    done
    echo "$n"
    return 1
}

# port_packets PORT DIR: packets counted for PORT's queue 0 in direction DIR (rx|tx).
port_packets() {
    jq -r --arg p "$1" --arg d "$2" \
        '.ports[] | select(.name == $p) | .queues[0][$d].packets' "$stats" 2>/dev/null || echo 0
}

tap_rx() { link_stat "$1" "$2" rx_packets || echo 0; }

log_lines() { wc -l <"$log"; }

# require_pair_b_forwards SINCE_STATS SINCE_TAP: both counters moved past the
# given values and are still moving.
require_pair_b_forwards() {
    local s1 t1 s2 t2
    s1=$(port_packets vmB rx)
    t1=$(tap_rx "$ns_b" "$tap_b")
    sleep 1.5
    s2=$(port_packets vmB rx)
    t2=$(tap_rx "$ns_b" "$tap_b")
    ((s2 > s1 && s1 >= $1)) || fail "$2: vmB rx packets in the stats JSON stopped: $1 -> $s1 -> $s2"
    ((t2 > t1 && t1 >= $3)) || fail "$2: $tap_b rx_packets stopped: $3 -> $t1 -> $t2"
    b_stats_now=$s2
    b_tap_now=$t2
}

# ---- expected log lines per attack (ERE, one per line; all must appear) --------

expected_log() {
    case $1 in
        bad-mem-table)
            echo 'device broken: SET_MEM_TABLE refused \(memory region extends beyond the end of its file\)'
            echo 'device broken: SET_MEM_TABLE refused \(mmap_offset \+ size overflows\)'
            echo 'device broken: SET_MEM_TABLE refused \(memory regions overlap\)'
            echo 'device broken: SET_MEM_TABLE refused \(memory region count not in 1\.\.8\)'
            echo 'device broken: SET_MEM_TABLE refused \(wrong number of fds for the request\)'
            echo 'device broken: SET_MEM_TABLE refused \(memory region fd is not a regular file\)'
            echo 'device broken: SET_MEM_TABLE refused \(sealed memory region fd lacks F_SEAL_SHRINK\)'
            ;;
        ring-outside-memory)
            echo 'device broken: vring 1: ring area not wholly inside one guest memory region'
            ;;
        looping-chain)
            echo 'device broken: ring 1: TX descriptor chain: descriptor chain loops'
            echo 'device broken: ring 1: TX descriptor chain: descriptor next index out of range'
            ;;
        repeated-mem-table)
            echo 'front end connected'
            ;;
        avail-index-jump)
            echo 'device broken: ring 1: TX avail ring: avail index moved by more than the queue size'
            ;;
        shrink-memfd)
            echo 'device broken: .*(access faulted \(SIGBUS\)|guest memory truncated)'
            ;;
        call-not-eventfd)
            echo 'device broken: SET_VRING_CALL refused \(fd is not an eventfd\)'
            echo 'device broken: SET_VRING_KICK refused \(fd is not an eventfd\)'
            echo 'device broken: SET_VRING_ERR refused \(fd is not an eventfd\)'
            ;;
        half-message)
            echo 'connection closed: peer closed the connection'
            echo 'rejected a front end: 1 already connected'
            ;;
        connection-flood)
            echo 'rejected a front end: 1 already connected'
            ;;
        rejected-fds-stream)
            echo 'refused SET_OWNER \(3\): fds attached to a request that takes none'
            echo 'refused SET_MEM_TABLE \(5\): memory region extends beyond the end of its file'
            ;;
        too-many-fds)
            echo 'connection closed: (ancillary data truncated|more than 8 fds)'
            ;;
        oversized-payload)
            echo 'connection closed: payload larger than 4096 bytes'
            echo 'device broken: SET_VRING_NUM refused \(payload size does not match the request\)'
            echo 'connection closed: header version is not 1'
            ;;
        bad-vring-index)
            echo 'refused SET_VRING_NUM \(8\): vring index out of range'
            echo 'refused SET_VRING_BASE \(10\): vring index out of range'
            echo 'refused SET_VRING_ADDR \(9\): vring index out of range'
            echo 'refused SET_VRING_KICK \(12\): vring index out of range'
            echo 'device broken: SET_VRING_NUM refused \(vring index out of range\)'
            ;;
        unread-replies)
            echo 'connection closed: front end does not read its replies \(output queue full\)'
            ;;
        unnegotiated-request)
            echo 'refused ADD_MEM_REG \(37\): request needs a protocol feature that was not negotiated'
            echo 'device broken: GET_INFLIGHT_FD refused \(request needs a protocol feature that was not negotiated\)'
            ;;
        mmap-offset-once)
            echo 'connection closed: peer closed the connection'
            ;;
        ring-state-rules)
            echo 'refused SET_MEM_TABLE \(5\): memory region extends beyond the end of its file'
            echo 'refused SET_VRING_NUM \(8\): vring size is zero, above 32768 or not a power of 2'
            echo 'refused SET_VRING_NUM \(8\): ring is running'
            echo 'refused SET_VRING_BASE \(10\): ring is running'
            echo 'refused SET_VRING_ADDR \(9\): ring is running'
            echo 'refused SET_FEATURES \(2\): acked features that were not offered'
            echo 'refused SET_FEATURES \(2\): features changed while a ring is running'
            ;;
        bad-indirect)
            echo 'device broken: ring 1: TX descriptor chain: INDIRECT flag without INDIRECT_DESC'
            echo 'device broken: ring 1: TX descriptor chain: indirect table length is 0 or not a multiple of 16'
            echo 'device broken: ring 1: TX descriptor chain: INDIRECT descriptor inside an indirect table'
            echo 'device broken: ring 1: TX descriptor chain: INDIRECT and NEXT set together'
            echo 'device broken: ring 1: TX descriptor chain: indirect table larger than the queue size'
            ;;
        rx-readonly-buffer)
            echo 'device broken: ring 0: RX descriptor chain: device-readable buffer in an RX chain'
            ;;
        packed-ring)
            echo 'packed rings \(VIRTIO_F_RING_PACKED negotiated\)'
            echo 'device broken: ring 1: TX descriptor chain: chained descriptor not marked available for this wrap'
            echo 'device broken: ring 1: TX descriptor chain: buffer id >= queue size'
            echo 'device broken: ring 1: TX descriptor chain: descriptor chain longer than the queue size'
            ;;
        *) return 1 ;;
    esac
}

# Attacks after which no device may have been broken.
no_break_expected() { [[ $1 == mmap-offset-once || $1 == repeated-mem-table ]]; }

all_attacks=(bad-mem-table ring-outside-memory looping-chain avail-index-jump shrink-memfd
    call-not-eventfd half-message connection-flood rejected-fds-stream too-many-fds
    oversized-payload bad-vring-index unread-replies unnegotiated-request repeated-mem-table
    mmap-offset-once ring-state-rules bad-indirect rx-readonly-buffer packed-ring)
if (($# > 0)); then
    attacks=("$@")
else
    attacks=("${all_attacks[@]}")
fi
for a in "${attacks[@]}"; do
    expected_log "$a" >/dev/null || fail "unknown attack $a"
done

# ---- set-up --------------------------------------------------------------------

ncpu=$(nproc)
worker_cpu=$((ncpu > 1 ? 1 : 0))
cat >"$work/vnetd.toml" <<EOF
[daemon]
log_level = "info"
stats_file = "$stats"
control_socket = "$work/vnetd.ctl"

[datapath]
worker_cpus = [$worker_cpu]

[[port]]
name = "vmA"
type = "vhost-user"
socket_path = "$sock_a"

[[port]]
name = "tapA"
type = "tap"
tap = "$tap_a"

[[port]]
name = "vmB"
type = "vhost-user"
socket_path = "$sock_b"

[[port]]
name = "tapB"
type = "tap"
tap = "$tap_b"

[[connect]]
ports = ["vmA", "tapA"]

[[connect]]
ports = ["vmB", "tapB"]
EOF

bg_start --log "$log" "$vnetd_bin" --config "$work/vnetd.toml"
vnetd_pid=$BG_PID
# vnetd's taps go with it; should one outlive it, it goes at exit too.
on_exit ip link del "$tap_a"
on_exit ip link del "$tap_b"
for _ in $(seq 100); do
    [[ -S $sock_a && -S $sock_b ]] && ip link show "$tap_a" >/dev/null 2>&1 &&
        ip link show "$tap_b" >/dev/null 2>&1 && break
    vnetd_alive || fail "vnetd exited at start-up"
    sleep 0.1
done
[[ -S $sock_a && -S $sock_b ]] || fail "vnetd did not create its sockets"

# Each tap up in a netns of its own (a tap that is down fails every write).
for pair in "$ns_a:$tap_a" "$ns_b:$tap_b"; do
    ns=${pair%%:*}
    tap=${pair#*:}
    netns_new "$ns"
    ip link set "$tap" netns "$ns" || fail "move $tap into $ns"
    ip -n "$ns" link set "$tap" up || fail "$tap up"
done

# Pair B: traffic for the whole run, paced so the attacker gets CPU time.
bg_start --log "$work/pktgen_b.log" taskset -c 0 "$pktgen_bin" --socket-path "$sock_b" --tx --size 64 \
    --rate 2000 --duration 0 --connect-timeout 20
b_forwards() { (($(port_packets vmB rx) > 0)); }
wait_for 10 "pair B does not forward (vmB rx packets stay 0)" b_forwards
require_pair_b_forwards 0 "start" 0
sleep 1
baseline_fds=$(steady_fd_count)
ls -l "/proc/$vnetd_pid/fd" >"$work/fds.baseline" 2>/dev/null
echo "vnetd pid $vnetd_pid: baseline $baseline_fds fds; pair B forwarding ($b_stats_now packets)"

# ---- the attacks ---------------------------------------------------------------

summary=()
run_attack() {
    local attack=$1 out=$work/hostile.$1.log
    local extra=()
    case $attack in
        shrink-memfd) extra=(--repeat "$shrink_rounds") ;;
        half-message) extra=(--stall-seconds 10) ;;
    esac
    local log_from b_stats0 b_tap0 start rc
    log_from=$(($(log_lines) + 1))
    b_stats0=$(port_packets vmB rx)
    b_tap0=$(tap_rx "$ns_b" "$tap_b")
    start=$(date +%s.%N)

    bg_start --log "$out" taskset -c 0 "$hostile_bin" --socket-path "$sock_a" --attack "$attack" \
        --watch-pid "$vnetd_pid" "${extra[@]}"
    local bg_pid=$BG_PID
    if [[ $attack == half-message ]]; then
        # During the stall: the other pair forwards and the control thread
        # keeps rewriting the stats file.
        sleep 3
        require_pair_b_forwards "$b_stats0" "$attack (during the stall)" "$b_tap0"
        sleep 2
        require_pair_b_forwards "$b_stats_now" "$attack (later in the stall)" "$b_tap_now"
    fi
    wait "$bg_pid"
    rc=$?
    forget "$bg_pid"
    local took
    took=$(echo "$(date +%s.%N) - $start" | bc)
    sed 's/^/    /' "$out"
    vnetd_alive || fail "$attack: vnetd died"
    ((rc == 0)) || fail "$attack: vnet-hostile exited $rc"

    if [[ $attack == half-message ]]; then
        # A new connection to the same socket after the staller left works.
        timeout 30 taskset -c 0 "$pktgen_bin" --socket-path "$sock_a" --tx --size 64 \
            --duration 2 --connect-timeout 20 >"$work/pktgen_a_half.log" 2>&1 ||
            fail "$attack: vnet-pktgen on $sock_a after the staller: $(tail -n 3 "$work/pktgen_a_half.log")"
        local a_tx
        a_tx=$(grep -oE 'tx-packets: *[0-9]+' "$work/pktgen_a_half.log" | grep -oE '[0-9]+$')
        ((${a_tx:-0} > 0)) || fail "$attack: vnet-pktgen after the staller sent nothing"
        echo "    vnet-pktgen on the same socket after the staller: tx-packets $a_tx"
    fi

    local fds
    if ! fds=$(settle_fds); then
        ls -l "/proc/$vnetd_pid/fd" >"$work/fds.after" 2>/dev/null
        diff "$work/fds.baseline" "$work/fds.after" | grep '^[<>]' | sed 's/^/    /'
        fail "$attack: vnetd has $fds fds, baseline $baseline_fds"
    fi
    require_pair_b_forwards "$b_stats0" "$attack" "$b_tap0"

    local delta=$work/log.$attack
    tail -n "+$log_from" "$log" >"$delta"
    local pattern first=""
    while IFS= read -r pattern; do
        local line
        # Lines of vmA's device and connection, or of its listening socket.
        # (No early exit in the pipeline: with pipefail a SIGPIPE'd grep fails it.)
        line=$(grep -F -e "[vmA] " -e "[$sock_a] " "$delta" | grep -E "$pattern" | sed -n 1p)
        [[ -n $line ]] || fail "$attack: no log line matching '$pattern'"
        [[ -z $first ]] && first=${line#*\] }
    done < <(expected_log "$attack")
    if no_break_expected "$attack" && grep -q 'device broken' "$delta"; then
        fail "$attack: a device broke: $(grep -m1 'device broken' "$delta")"
    fi
    echo "ok: $attack ($(printf '%.2f' "$took") s): vnetd alive, $fds fds = baseline," \
        "vmB rx $b_stats0 -> $b_stats_now, $tap_b rx_packets $b_tap0 -> $b_tap_now"
    echo "    log: $first"
    summary+=("$(printf '%-22s %6.2f s  fds %s  vmB rx %s -> %s  | %s' "$attack" "$took" "$fds" \
        "$b_stats0" "$b_stats_now" "$first")")
}

for attack in "${attacks[@]}"; do
    echo "== $attack"
    run_attack "$attack"
done

# ---- afterwards: vmA's socket still serves a well-behaved front end ------------

a_stats0=$(port_packets vmA rx)
a_tap0=$(tap_rx "$ns_a" "$tap_a")
timeout 60 taskset -c 0 "$pktgen_bin" --socket-path "$sock_a" --tx --size 64 --duration 3 \
    --connect-timeout 20 >"$work/pktgen_a.log" 2>&1 ||
    fail "well-behaved vnet-pktgen on $sock_a after the attacks: $(tail -n 3 "$work/pktgen_a.log")"
a_tx=$(grep -oE 'tx-packets: *[0-9]+' "$work/pktgen_a.log" | grep -oE '[0-9]+$')
sleep 1.5
a_stats1=$(port_packets vmA rx)
a_tap1=$(tap_rx "$ns_a" "$tap_a")
((${a_tx:-0} > 0)) || fail "vnet-pktgen on $sock_a sent nothing after the attacks"
((a_stats1 - a_stats0 >= a_tx)) ||
    fail "vmA rx packets grew by $((a_stats1 - a_stats0)), vnet-pktgen sent $a_tx"
((a_tap1 - a_tap0 >= a_tx)) ||
    fail "$tap_a rx_packets grew by $((a_tap1 - a_tap0)), vnet-pktgen sent $a_tx"
echo "ok: after the attacks vnet-pktgen on vmA's socket sent $a_tx frames;" \
    "vmA rx +$((a_stats1 - a_stats0)), $tap_a rx_packets +$((a_tap1 - a_tap0))"

vnetd_alive || fail "vnetd died"
fds=$(settle_fds) || fail "vnetd has $fds fds after the final run, baseline $baseline_fds"
if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$log"; then
    fail "sanitizer report in vnetd's log: $(grep -m1 -E 'Sanitizer|runtime error:' "$log")"
fi

echo "summary (baseline $baseline_fds fds):"
printf '  %s\n' "${summary[@]}"
pass "${#attacks[@]} attack(s); vnetd survived all, pair B kept forwarding"
