#!/usr/bin/env bash
# TapDevice, BatchWriter and read_burst against real taps (root; $1 = build dir).
#
# tap_probe (tests/integration/tools) holds the tap's fd while the link is
# moved into a private netns: the fd keeps working there. Frames tap_probe
# writes must arrive byte-exact, in order, at an AF_PACKET capture in the
# netns, in both writer modes; frames sent from the netns must be read back.
# Also: offloads applied for real (ethtool -k), open errors are clear, IFF_NAPI
# opens when offered, and a tap goes away with its fd unless persistent.
# Everything it makes is named after its pid and removed on exit.
set -euo pipefail

build=${1:?usage: test_tap_device.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
probe_bin=$build/tests/integration/tools/tap_probe
frames_py=$here/tools/tap_frames.py

# shellcheck source=lib/common.sh
. "$here/lib/common.sh"
ns=$(ns_name vtns)
tap=$(link_name vt)
napi_tap=$(link_name vtn)
persist_tap=$(link_name vtp)
work_dir test_tap_device
work=$WORK
fail_log "$work/probe.log" 1000
probe_pid=""
capture_pid=""
for dev in "$tap" "$napi_tap" "$persist_tap"; do
    on_exit ip link del "$dev"
done

# value of key=value in a line: field KEY LINE
field() { grep -o "\b$1=[^ ]*" <<<"$2" | head -1 | cut -d= -f2-; }

[[ $(id -u) == 0 ]] || fail "needs root (netns, taps)"
[[ -x $probe_bin ]] || fail "$probe_bin is not built"

# ---- tap_probe as a coprocess: one command per line, answered by a last
# line starting with "ok" or "error" (kept in $answer; all lines in answer.txt).
probe_start() {
    coproc PROBE { exec "$probe_bin" serve "$@" 2>>"$work/probe.log"; }
    probe_pid=$PROBE_PID
    track "$probe_pid"
    probe_in=${PROBE[1]}
    probe_out=${PROBE[0]}
    IFS= read -r -t 20 -u "$probe_out" ready || fail "tap_probe serve $* did not start"
    [[ $ready == ready* ]] || fail "tap_probe serve $*: $ready"
}

probe_cmd() {
    echo "$*" >&"$probe_in"
    : >"$work/answer.txt"
    local line
    while IFS= read -r -t 60 -u "$probe_out" line; do
        echo "$line" >>"$work/answer.txt"
        if [[ $line == ok* || $line == error* ]]; then
            answer=$line
            [[ $line == ok* ]] || fail "tap_probe '$*': $line"
            return 0
        fi
    done
    fail "no answer from tap_probe to '$*'"
}

probe_quit() {
    echo quit >&"$probe_in"
    local rc=0
    wait "$probe_pid" || rc=$?
    forget "$probe_pid"
    probe_pid=""
    [[ $rc == 0 ]] || fail "tap_probe exited with $rc"
}

# ---- AF_PACKET capture in the netns, started before the writer writes.
capture_start() { # ifname count tag size
    rm -f "$work/ready"
    bg_start --log "$work/capture.out" ip netns exec "$ns" python3 "$frames_py" capture \
        --ifname "$1" --count "$2" --tag "$3" --size "$4" --timeout 20 --ready "$work/ready"
    capture_pid=$BG_PID
    wait_until 10 test -e "$work/ready" && return 0
    fail "capture did not start: $(cat "$work/capture.out")"
}

capture_wait() {
    local rc=0
    wait "$capture_pid" || rc=$?
    forget "$capture_pid"
    capture_pid=""
    [[ $rc == 0 ]] || fail "capture: $(cat "$work/capture.out")"
}

# TX: tap_probe writes COUNT frames with MODE; the netns must see each, exactly.
check_tx() { # ifname mode count size tag
    capture_start "$1" "$3" "$5" "$4"
    probe_cmd write "$2" "$3" "$4" "$5"
    [[ $(field written "$answer") == "$3" && $(field failed "$answer") == 0 ]] ||
        fail "write $2: $answer"
    local used
    used=$(field mode "$answer")
    [[ $used == "$2" ]] || echo "warning: $2 requested, $used used (io_uring unavailable?)"
    capture_wait
    ok "$3 frames of $4 B written with $used arrived byte-exact in order ($1)"
}

# RX: the netns sends COUNT frames; tap_probe must read each, exactly.
check_rx() { # ifname count size tag
    ip netns exec "$ns" python3 "$frames_py" send --ifname "$1" --count "$2" --tag "$4" \
        --size "$3" >/dev/null
    probe_cmd read "$2" 5000
    python3 "$frames_py" verify --count "$2" --tag "$4" --size "$3" <"$work/answer.txt" ||
        fail "read back from $1"
    ok "$2 frames of $3 B sent from the netns were read back byte-exact ($1)"
}

link_gone() { ! ip link show "$1" >/dev/null 2>&1 && ! ip -n "$ns" link show "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------------------
features=$("$probe_bin" features)
echo "tun features: $features"
napi_offered=$(field napi "$features")

# Option and open errors are exceptions whose message says what and why.
if "$probe_bin" serve --name way-too-long-name </dev/null 2>"$work/err"; then
    fail "a 17-character name was accepted"
fi
grep -q "way-too-long-name.*at most 15" "$work/err" || fail "unclear error: $(cat "$work/err")"
ok "a too-long name fails with: $(cat "$work/err")"

# No IPv6 router solicitations or MLD reports on the moved tap: the reader
# should see only test frames (others are skipped anyway).
netns_new "$ns"

# ---- a created tap with MTU, txqueuelen and link up
probe_start --name "$tap" --mtu 1400 --txqueuelen 2000
[[ $(field created "$ready") == 1 && $(field napi "$ready") == 0 ]] || fail "open: $ready"
[[ $(field mtu "$ready") == 1400 && $(field txqueuelen "$ready") == 2000 ]] || fail "link: $ready"
link=$(ip link show "$tap")
grep -q "mtu 1400" <<<"$link" && grep -q "qlen 2000" <<<"$link" && grep -q "[<,]UP[,>]" <<<"$link" ||
    fail "ip link disagrees: $link"
ok "created $tap: $ready"

# A second single-queue opener of the same name is refused, with a hint.
if "$probe_bin" serve --name "$tap" </dev/null 2>"$work/err"; then
    fail "a second single-queue open of $tap succeeded"
fi
grep -q "TUNSETIFF failed.*EBUSY.*multi_queue" "$work/err" || fail "unclear error: $(cat "$work/err")"
ok "a second opener fails with: $(cat "$work/err")"

# ---- offloads, applied for real and read back with ethtool
all=guest_csum,guest_tso4,guest_tso6,guest_ecn,guest_ufo,guest_uso4,guest_uso6
probe_cmd offloads "$all"
applied=$(field applied "$answer")
case $applied in
    "csum|tso4|tso6|tso_ecn|ufo|uso4|uso6" | "csum|tso4|tso6|tso_ecn|ufo" | "csum|tso4|tso6|tso_ecn") ;;
    *) fail "offloads for every GUEST_* feature: $answer" ;;
esac
if command -v ethtool >/dev/null; then
    k=$(ethtool -k "$tap")
    grep -q "^tx-checksumming: on" <<<"$k" && grep -q "^tcp-segmentation-offload: on" <<<"$k" ||
        fail "ethtool after $applied: $k"
    if [[ $applied == *uso4* ]]; then
        grep -q "^tx-udp-segmentation: on" <<<"$k" || fail "USO applied but not on: $k"
    fi
fi
ok "all GUEST_* offloads -> TUNSETOFFLOAD $applied (kernel $(uname -r))"

probe_cmd offloads guest_tso4,guest_tso6,guest_uso4,guest_uso6
[[ $(field applied "$answer") == none ]] || fail "segmentation without GUEST_CSUM: $answer"
if command -v ethtool >/dev/null; then
    k=$(ethtool -k "$tap")
    grep -q "^tx-checksumming: off" <<<"$k" && grep -q "^tcp-segmentation-offload: off" <<<"$k" ||
        fail "ethtool after none: $k"
fi
ok "TSO/USO without GUEST_CSUM -> none"

probe_cmd offloads guest_csum,guest_uso4,guest_ecn
[[ $(field applied "$answer") == csum ]] || fail "USO4 alone / ECN alone: $answer"
ok "GUEST_USO4 without USO6 and GUEST_ECN without TSO -> csum only"
probe_cmd offloads none

# ---- move the link into the netns; the fd keeps working
ip link set "$tap" netns "$ns"
ip -n "$ns" link set "$tap" up
probe_cmd info
for mode in io_uring writev; do
    check_tx "$tap" "$mode" 256 64 1
    check_tx "$tap" "$mode" 64 1414 2
done
check_rx "$tap" 200 64 9
check_rx "$tap" 50 1414 10

probe_quit
link_gone "$tap" || fail "$tap still exists after its only fd closed"
ok "$tap went away with its fd (not persistent)"

# ---- IFF_NAPI
if [[ $napi_offered == 1 ]]; then
    probe_start --name "$napi_tap" --napi
    [[ $(field napi "$ready") == 1 ]] || fail "IFF_NAPI not reported by TUNGETIFF: $ready"
    ip link set "$napi_tap" netns "$ns"
    ip -n "$ns" link set "$napi_tap" up
    check_tx "$napi_tap" writev 128 64 3
    check_tx "$napi_tap" io_uring 128 64 4
    check_rx "$napi_tap" 64 64 11
    probe_quit
    link_gone "$napi_tap" || fail "$napi_tap still exists"
    ok "IFF_NAPI tap works and went away with its fd"

    probe_start --name "$napi_tap" --napi --napi-frags
    [[ $(field napi_frags "$ready") == 1 ]] || fail "IFF_NAPI_FRAGS not reported: $ready"
    probe_quit
    ok "IFF_NAPI_FRAGS opens when offered"
else
    if "$probe_bin" serve --name "$napi_tap" --napi </dev/null 2>"$work/err"; then
        fail "--napi accepted although TUNGETFEATURES does not offer it"
    fi
    grep -q "does not offer" "$work/err" || fail "unclear error: $(cat "$work/err")"
    ok "IFF_NAPI not offered here; asking for it fails with: $(cat "$work/err")"
fi

# ---- persist, and attaching more queues to an existing multi-queue tap
probe_start --name "$persist_tap" --persist --multi-queue
[[ $(field created "$ready") == 1 ]] || fail "open: $ready"
second=$("$probe_bin" serve --name "$persist_tap" --multi-queue </dev/null 2>>"$work/probe.log") ||
    fail "second queue of $persist_tap"
[[ $(field created "$second") == 0 ]] || fail "second queue: $second"
ok "a second queue attaches to multi-queue $persist_tap"
probe_quit
ip link show "$persist_tap" >/dev/null 2>&1 || fail "persistent $persist_tap vanished with its fd"
ok "persistent $persist_tap outlives its fd"

probe_start --name "$persist_tap" --multi-queue
[[ $(field created "$ready") == 0 ]] || fail "re-open of $persist_tap: $ready"
probe_cmd persist 0
probe_quit
link_gone "$persist_tap" || fail "$persist_tap still exists after persist 0 and close"
ok "after TUNSETPERSIST 0, $persist_tap went away with its fd"

pass
