#!/bin/bash
# switch-callgrind.sh: instructions a learning switch spends per frame, as
# callgrind counts them (exactly repeatable, unlike the clock on a shared
# machine): vnetd runs one switch under valgrind with PORTS vhost-user
# ports, only SwitchDatapath::run_turn collected; vnet-pktgen sends FRAMES
# 64-byte frames from vm0 to vm1, its source MAC cycling through MACS
# addresses; the other ports are silent receivers that announced their MAC.
# switchscale's growth (issue 9) without the machine's drift:
#
#   for c in "2 10" "16 10" "2 10000"; do tools/bench/switch-callgrind.sh build $c; done
#
# Usage: switch-callgrind.sh BUILD_DIR PORTS MACS [FRAMES]   (PORTS >= 2)
# Prints: ports, macs, frames sent and received, instructions, per frame sent
# and per frame received (the one to compare when the receiver dropped).
# With CALLGRIND_OUT=FILE the profile is kept there, for a per-function
# breakdown: callgrind_annotate [--inclusive=yes] FILE. With
# CALLGRIND_CSV=FILE the row is also appended to that CSV (the header first
# when the file is new): the summary of a series of runs, as
# docs/bench/switch-callgrind-*.csv.
set -euo pipefail

BUILD_DIR=${1:?usage: $0 BUILD_DIR PORTS MACS [FRAMES]}
PORTS=${2:?PORTS}
MACS=${3:?MACS}
FRAMES=${4:-200000}
[ "$PORTS" -ge 2 ] || { echo "PORTS must be 2 or more" >&2; exit 2; }
VNETD="$BUILD_DIR/apps/vnetd"
PKTGEN="$BUILD_DIR/apps/vnet-pktgen"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }

WORK=$(mktemp -d /tmp/switch-callgrind.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

{
    printf '[daemon]\ncontrol_socket = "%s/ctl.sock"\n' "$WORK"
    printf '[[switch]]\nname = "s0"\nmac_table_size = 16384\n'
    for ((p = 0; p < PORTS; p++)); do
        printf '[[port]]\nname = "vm%d"\ntype = "vhost-user"\nsocket_path = "%s/vm%d.sock"\nswitch = "s0"\n' \
            "$p" "$WORK" "$p"
    done
} >"$WORK/vnetd.toml"

valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
    --toggle-collect='vnet::dataplane::switching::SwitchDatapath::run_turn*' \
    "$VNETD" --config "$WORK/vnetd.toml" --log-level warn >"$WORK/vnetd.log" 2>&1 &
VNETD_PID=$!
PIDS+=("$VNETD_PID")
for _ in $(seq 100); do
    [ -S "$WORK/vm$((PORTS - 1)).sock" ] && break
    sleep 0.2
done

# Called directly, not through a function: $! must be pktgen itself.
PKTGEN_COMMON=(--stats-interval 0 --connect-timeout 60)
# Every port but the sender's announces its MAC; all but vm1 stay silent.
for ((p = 1; p < PORTS; p++)); do
    mac=$(printf '02:00:00:00:01:%02x' "$p")
    "$PKTGEN" "${PKTGEN_COMMON[@]}" --socket-path "$WORK/vm$p.sock" --tx --count 1 --src-mac "$mac" \
        --dst-mac ff:ff:ff:ff:ff:ff >/dev/null 2>&1
    if ((p >= 2)); then
        "$PKTGEN" "${PKTGEN_COMMON[@]}" --socket-path "$WORK/vm$p.sock" --rx >/dev/null 2>&1 &
        PIDS+=($!)
    fi
done
"$PKTGEN" "${PKTGEN_COMMON[@]}" --socket-path "$WORK/vm1.sock" --rx --json >"$WORK/rx.out" 2>&1 &
RX_PID=$!
sleep 1
"$PKTGEN" "${PKTGEN_COMMON[@]}" --socket-path "$WORK/vm0.sock" --tx --count "$FRAMES" --size 64 --json \
    --src-mac 02:00:00:10:00:00 --src-mac-count "$MACS" --dst-mac 02:00:00:00:01:01 \
    --drain-timeout 5 >"$WORK/tx.out" 2>&1
sleep 2
kill -INT "$RX_PID"
wait "$RX_PID" || true
kill -INT "$VNETD_PID"
wait "$VNETD_PID" || { echo "vnetd failed: $(tail -3 "$WORK/vnetd.log")" >&2; exit 1; }

if [ -n "${CALLGRIND_OUT:-}" ]; then
    cp "$WORK/callgrind.out" "$CALLGRIND_OUT"
fi
python3 - "$WORK" "$PORTS" "$MACS" "${CALLGRIND_CSV:-}" <<'PY'
import csv, json, os, re, subprocess, sys
work, ports, macs, csv_path = sys.argv[1:5]
def last_json(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")][-1]
sent = last_json(f"{work}/tx.out")["tx-packets"]
received = last_json(f"{work}/rx.out")["rx-packets"]
report = subprocess.run(["callgrind_annotate", f"{work}/callgrind.out"],
                        capture_output=True, text=True, check=True).stdout
instructions = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", report)[1].replace(",", ""))
# Per frame received is the figure to compare: frames the receiver's ring had
# no room for cost the switch less than delivered ones, so per frame sent
# moves with the drops (+-40 a frame between runs of one build).
per_received = f"{instructions / received:.0f}" if received else "n/a"
print(f"ports {ports} macs {macs}: sent {sent} received {received} "
      f"instructions {instructions} per frame sent {instructions / sent:.0f} "
      f"per frame received {per_received}")
if csv_path:
    new = not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0
    with open(csv_path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["ports", "macs", "frames_sent", "frames_received", "instructions",
                        "instructions_per_frame", "instructions_per_frame_received"])
        w.writerow([ports, macs, sent, received, instructions, f"{instructions / sent:.0f}",
                    per_received])
PY
