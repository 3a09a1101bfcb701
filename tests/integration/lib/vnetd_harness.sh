# shellcheck shell=bash
# Shared shell helpers for the vnetd + vnet-pktgen integration tests
# (test_pktgen_vnetd_tap.sh, test_reconnect.sh). Source it after setting
#   WORK   a private temp directory (logs: *.log, *.err, *.out end up there)
# It keeps PIDS (processes this test started) and NETNS (namespaces it
# made); vnetd_harness_cleanup (installed as the EXIT trap by
# vnetd_harness_init) stops and removes exactly those, nothing else.
#
# Namespaces: new_netns makes one with IPv6 off, so the stack sends nothing
# of its own (no MLD report, DAD probe or router solicitation) through a
# tap that lives there; every frame a tap counts is then ours.

PIDS=()
NETNS=()

vnetd_harness_cleanup() {
    local pid ns
    for pid in "${PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 30); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    for ns in "${NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null
    done
    [ -n "${WORK:-}" ] && [ -z "${VNET_KEEP_WORK:-}" ] && rm -rf "$WORK"
}

vnetd_harness_init() {
    trap vnetd_harness_cleanup EXIT
    trap 'exit 130' INT TERM
}

# fail MESSAGE: print it, the tail of every log of the run, and exit 1.
fail() {
    echo "FAIL: $*"
    local f
    for f in "$WORK"/*.log "$WORK"/*.err "$WORK"/*.out; do
        [ -s "$f" ] || continue
        echo "----- $(basename "$f") (last 30 lines)"
        tail -n 30 "$f"
    done
    exit 1
}

# track PID: remember a process this test started (killed at exit).
track() { PIDS+=("$1"); }

# forget PID: it has exited and was waited for.
forget() {
    local keep=() p
    for p in "${PIDS[@]}"; do
        [ "$p" = "$1" ] || keep+=("$p")
    done
    PIDS=("${keep[@]}")
}

# wait_for FILE REGEX SECONDS
wait_for() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# stop_pid PID SIGNAL: send SIGNAL, wait up to 20 s for the exit, reap it.
# Returns the exit status (128+n for a signal, 124 when it did not exit).
# stderr is closed for the whole function: bash reports a child killed by
# a signal ("Killed") on stderr as soon as it reaps it, and a test that
# kills on purpose should not print that.
stop_pid() {
    kill -"$2" "$1"
    local i
    for ((i = 0; i < 200; i++)); do
        kill -0 "$1" || break
        sleep 0.1
    done
    if kill -0 "$1"; then
        return 124
    fi
    wait "$1"
    local rc=$?
    forget "$1"
    return $rc
} 2>/dev/null

# new_netns NAME
new_netns() {
    ip netns add "$1" || fail "ip netns add $1"
    NETNS+=("$1")
    ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1 || fail "sysctl in $1"
}

# tap_stat NS TAP FIELD: /sys/class/net/TAP/statistics/FIELD, read in NS.
tap_stat() {
    ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3" 2>/dev/null
}

# vnetd_stats FILE PORT.DIR.FIELD...: the values, space-separated, from a
# vnetd stats JSON (queue 0; FIELD "drops" is the sum of every reason,
# "gro_frames"/"gro_segments" the user-space GRO counters).
vnetd_stats() {
    python3 - "$@" <<'EOF'
import json, sys
path, keys = sys.argv[1], sys.argv[2:]
stats = json.load(open(path))
ports = {p["name"]: p for p in stats["ports"]}
out = []
for key in keys:
    port, direction, field = key.split(".")
    if port not in ports:
        sys.exit(f"no port {port} in {path}")
    q = ports[port]["queues"][0][direction]
    if field == "drops":
        out.append(str(sum(q["drops"].values())))
    elif field.startswith("gro_"):  # gro_frames, gro_segments
        out.append(str(q["gro"][field[4:]]))
    else:
        out.append(str(q[field]))
print(" ".join(out))
EOF
}

# pktgen_value FILE KEY: "KEY: N" from vnet-pktgen's final report.
pktgen_value() {
    grep -E "^$2: " "$1" | tail -n 1 | awk '{print $2}'
}

# check_equal CASE NAME=VALUE...: every value must equal the first.
check_equal() {
    local label=$1 first="" pair value
    shift
    echo "($label) $*"
    for pair in "$@"; do
        value=${pair#*=}
        [ -n "$value" ] || fail "($label) ${pair%%=*} is missing"
        [ -n "$first" ] || first=$value
        [ "$value" = "$first" ] || fail "($label) ${pair%%=*} = $value, expected $first"
    done
}

# check_zero CASE NAME=VALUE...: every value must be 0.
check_zero() {
    local label=$1 pair value
    shift
    for pair in "$@"; do
        value=${pair#*=}
        [ "$value" = 0 ] || fail "($label) ${pair%%=*} = ${value:-missing}, expected 0"
    done
}

# check_vnetd_bytes CASE NAME VNETD_BYTES FRAME_BYTES PACKETS: vnetd's byte
# counters count each packet's 12-byte virtio-net header along with the
# frame (tap_port.cpp, vhost_user_port.cpp); the kernel and vnet-pktgen
# count frame bytes only. Either convention passes, nothing in between.
check_vnetd_bytes() {
    local label=$1 name=$2 got=$3 frame=$4 packets=$5
    if [ "$got" = "$frame" ]; then
        return 0
    fi
    [ "$got" = $((frame + 12 * packets)) ] ||
        fail "($label) vnetd $name bytes = $got: neither the frame bytes $frame" \
            "nor frames + 12-byte virtio-net headers $((frame + 12 * packets))"
}

# fd_count PID: open file descriptors of PID.
fd_count() {
    local fds=(/proc/"$1"/fd/*)
    echo "${#fds[@]}"
}
