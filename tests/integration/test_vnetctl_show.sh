#!/bin/bash
# vnetctl show on a busy switch: vnetd with an L2 switch s0 and two
# vnet-pktgen front ends, a (--tx, 512-entry rings, EVENT_IDX and
# MRG_RXBUF on) sending to b (--rx, 128-entry rings, both off). The
# sender is frozen (SIGSTOP) while connected, so its rings hold still,
# then `vnetctl show --json` must say:
#   - both connected, negotiated features (and protocol features) exactly
#     what each pktgen printed it negotiated, and named: a with
#     VIRTIO_NET_F_MRG_RXBUF and VIRTIO_RING_F_EVENT_IDX, b without them;
#     split rings; at least one memory region, none empty;
#   - rings 0 and 1 of each, of the --queue-size, started, enabled, running;
#   - a's TX ring (1): every chain taken and completed (last_avail_idx ==
#     avail.idx == last_used_idx == used.idx), last_used_idx == the packets
#     it sent mod 65536, kicks > 0 (the worker sleeps between frames at
#     1000/s) and no more than pktgen's tx-kicks;
#   - b's RX ring (0): last_used_idx == used.idx == the packets vnetd
#     delivered mod 65536 (one buffer per frame), the same count a sent,
#     calls > 0 (b sleeps on its call fd between frames);
#   - the kick and call counts are the ones `vnetctl stats --json` has;
#   - `vnetctl show b` shows b only; the text dump has its sections;
#   - `vnetctl show NOSUCH` exits 1 with "vnetctl: no port named 'NOSUCH'".
# Then a is let go and stopped, and b's final count equals vnetd's.
#
# Usage: test_vnetctl_show.sh BUILD_DIR
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
RATE=1000  # gaps of 1 ms: longer than the adaptive spin, so the worker sleeps and is kicked

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
command -v python3 >/dev/null || skip "python3 not found"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetctl-show
CTL="$WORK/ctl.sock"
STATS="$WORK/stats.json"
MAC_A=02:00:00:00:0a:0a
MAC_B=02:00:00:00:0b:0b

cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"
stats_file = "$STATS"
[[switch]]
name = "s0"
destination_hold_us = 200000
[[port]]
name = "a"
type = "vhost-user"
socket_path = "$WORK/a.sock"
switch = "s0"
[[port]]
name = "b"
type = "vhost-user"
socket_path = "$WORK/b.sock"
switch = "s0"
TOML

start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
wait_for 10 "vnetd did not listen" log_count "$WORK/vnetd.log" "listening on" 2

bg_start --out "$WORK/rx.out" --err "$WORK/rx.log" "$PKTGEN" --connect-timeout 20 \
    --socket-path "$WORK/b.sock" --rx --queue-size 128 --mrg-rxbuf off --event-idx off
RX_PID=$BG_PID
wait_for 20 "receiving vnet-pktgen did not come up" log_has "$WORK/rx.log" "link up"
bg_start --out "$WORK/tx.out" --err "$WORK/tx.log" "$PKTGEN" --connect-timeout 20 \
    --socket-path "$WORK/a.sock" --tx --queue-size 512 --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$MAC_B"
TX_PID=$BG_PID
wait_for 20 "sending vnet-pktgen did not come up" log_has "$WORK/tx.log" "link up"

# ring_field PORT RING FIELD: one field of `vnetctl show --json`.
ring_field() {
    ctl --json show "$1" | python3 -c '
import json, sys
port = json.load(sys.stdin)[0]
print(next(r for r in port["rings"] if r["index"] == int(sys.argv[1]))[sys.argv[2]])' "$2" "$3"
}
at_least() { [ "$(ring_field "$1" "$2" "$3")" -ge "$4" ]; }
wait_for 30 "a sent fewer than 1000 frames" at_least a 1 packets 1000

kill -STOP "$TX_PID" || fail "SIGSTOP to the sender"
# Frozen: what a posted before it stopped is taken within the worker's
# 100 ms look-again even without a kick; then nothing moves.
# Settled: two answers 0.3 s apart are the same.
stable() {
    ctl --json show >"$WORK/show-now.json" || return 1
    if [ -f "$WORK/show.json" ] && cmp -s "$WORK/show.json" "$WORK/show-now.json"; then
        return 0
    fi
    mv "$WORK/show-now.json" "$WORK/show.json"
    sleep 0.3
    return 1
}
wait_for 20 "vnetctl show did not settle with the sender frozen" stable
ctl --json stats >"$WORK/stats-now.json" || fail "vnetctl stats failed"
ctl show >"$WORK/show.txt" || fail "vnetctl show (text) failed"
ctl --json show b >"$WORK/show-b.json" || fail "vnetctl show b failed"
echo "== vnetctl show"
cat "$WORK/show.txt"

TX_NEGOTIATED=$(grep -oE "negotiated 0x[0-9a-f]+ protocol 0x[0-9a-f]+" "$WORK/tx.log")
RX_NEGOTIATED=$(grep -oE "negotiated 0x[0-9a-f]+ protocol 0x[0-9a-f]+" "$WORK/rx.log")
python3 - "$WORK/show-now.json" "$WORK/stats-now.json" "$WORK/show-b.json" \
    "$WORK/show.txt" "$TX_NEGOTIATED" "$RX_NEGOTIATED" <<'PY' || fail "vnetctl show's view"
import json, sys
show, stats, show_b = (json.load(open(p)) for p in sys.argv[1:4])
text = open(sys.argv[4]).read()
ports = {p["name"]: p for p in show}
counts = {p["name"]: p for p in stats["ports"]}
assert sorted(ports) == ["a", "b"], sorted(ports)

def negotiated(line):  # "negotiated 0xF protocol 0xP" as vnet-pktgen printed it
    words = line.split()
    return int(words[1], 16), int(words[3], 16)

for name, line, size in (("a", sys.argv[5], 512), ("b", sys.argv[6], 128)):
    p = ports[name]
    assert p["state"] == "connected" and p["switch"] == "s0" and p["type"] == "vhost-user", p
    features, protocol = negotiated(line)
    assert p["features"]["bits"] == features and p["features"]["hex"] == hex(features), (name, p["features"], line)
    assert p["protocol_features"]["bits"] == protocol, (name, p["protocol_features"], line)
    assert "VIRTIO_F_VERSION_1" in p["features"]["names"], p["features"]
    assert p["ring_format"] == "split", p["ring_format"]
    assert len(p["memory"]) >= 1 and all(r["size"] > 0 for r in p["memory"]), p["memory"]
    rings = {r["index"]: r for r in p["rings"]}
    assert sorted(rings) == [0, 1], sorted(rings)
    for i, r in rings.items():
        assert (r["virtqueue"], r["direction"]) == (("rx", "to_guest") if i == 0 else ("tx", "from_guest")), r
        assert r["size"] == size and r["format"] == "split", (name, r)
        assert r["started"] and r["enabled"] and r["ready"] and r["running"], (name, r)
        assert r["kick_fd"] and r["call_fd"], (name, r)
    # The kick and call counts are the stats' (one counter, two views).
    q0 = counts[name]["queues"][0]
    assert (rings[1]["kicks"], rings[1]["calls"]) == (q0["rx"]["kicks"], q0["rx"]["calls"]), (rings[1], q0["rx"])
    assert (rings[0]["kicks"], rings[0]["calls"]) == (q0["tx"]["kicks"], q0["tx"]["calls"]), (rings[0], q0["tx"])

a_names, b_names = ports["a"]["features"]["names"], ports["b"]["features"]["names"]
for f in ("VIRTIO_NET_F_MRG_RXBUF", "VIRTIO_RING_F_EVENT_IDX"):
    assert f in a_names and f not in b_names, (f, a_names, b_names)

tx = {r["index"]: r for r in ports["a"]["rings"]}[1]
sent = counts["a"]["queues"][0]["rx"]["packets"]
assert sent >= 1000 and tx["packets"] == sent and tx["drops"] == 0, (tx, sent)
assert tx["last_avail_idx"] == tx["guest"]["avail_idx"] == tx["last_used_idx"] == tx["guest"]["used_idx"] == sent % 65536, (tx, sent)
assert tx["kicks"] > 0, tx

rx = {r["index"]: r for r in ports["b"]["rings"]}[0]
delivered = counts["b"]["queues"][0]["tx"]["packets"]
assert delivered == sent and rx["packets"] == delivered and rx["drops"] == 0, (rx, delivered, sent)
assert rx["last_used_idx"] == rx["guest"]["used_idx"] == delivered % 65536, (rx, delivered)
assert "used_event" not in rx["guest"], rx  # b negotiated no EVENT_IDX
assert "used_event" in tx["guest"] and "avail_event" in tx["guest"], tx
assert rx["calls"] > 0, rx

assert [p["name"] for p in show_b] == ["b"], show_b
for part in ("Port a (vhost-user", "Port b (vhost-user", "  features 0x", "VIRTIO_NET_F_MRG_RXBUF",
             "  memory regions: ", "  ring 1 (tx, from the guest, queue pair 0): split, size 512",
             "  ring 0 (rx, to the guest, queue pair 0): split, size 128",
             "    kicks %d  calls %d" % (tx["kicks"], tx["calls"]), "  drops by reason: none"):
    assert part in text, part
print("ok: show says a sent %d (kicks %d), b got %d (calls %d)" % (sent, tx["kicks"], delivered, rx["calls"]))
print(sent, tx["kicks"], file=open(sys.argv[1] + ".sent", "w"))
PY
read -r SENT KICKS <"$WORK/show-now.json.sent"

# An unknown port: exit 1, vnetd's reason, nothing on stdout.
rc=0
ctl show NOSUCH >"$WORK/nosuch.out" 2>"$WORK/nosuch.err" || rc=$?
[ "$rc" = 1 ] || fail "vnetctl show NOSUCH exited $rc, expected 1"
[ "$(cat "$WORK/nosuch.err")" = "vnetctl: no port named 'NOSUCH'" ] ||
    fail "vnetctl show NOSUCH said: $(cat "$WORK/nosuch.err")"
[ ! -s "$WORK/nosuch.out" ] || fail "vnetctl show NOSUCH printed: $(cat "$WORK/nosuch.out")"
ok "vnetctl show NOSUCH: exit 1, $(cat "$WORK/nosuch.err")"

kill -CONT "$TX_PID" || fail "SIGCONT to the sender"
stop_pid "$TX_PID" INT || fail "sending vnet-pktgen exited with status $?"
sleep 1
stop_pid "$RX_PID" INT || fail "receiving vnet-pktgen exited with status $?"
TX_KICKS=$(pktgen_value "$WORK/tx.out" tx-kicks)
[ -n "$TX_KICKS" ] && [ "$KICKS" -le "$TX_KICKS" ] ||
    fail "vnetd counted $KICKS kicks on a's TX ring, pktgen sent ${TX_KICKS:-none}"
ok "kicks: vnetd read $KICKS of the $TX_KICKS pktgen sent by then or after"
stop_pid "$VNETD_PID" TERM || fail "vnetd exited with status $? on SIGTERM"
read -r a_rx b_tx drops < <(vnetd_stats "$STATS" a.rx.packets b.tx.packets b.tx.drops)
check_equal final "a_tx=$(pktgen_value "$WORK/tx.out" tx-packets)" "vnetd_a_rx=$a_rx" \
    "vnetd_b_tx=$b_tx" "b_rx=$(pktgen_value "$WORK/rx.out" rx-packets)"
check_equal final "b_tx_drops=$drops" "zero=0"
[ "$a_rx" -ge "$SENT" ] || fail "a sent $a_rx in all, fewer than the $SENT shown"
pass
