#!/bin/bash
# Switches made and deleted at run time (vnetctl switch add / switch del):
#
#   - vnetd starts with no port and no switch; `switch list` is empty;
#   - `switch add s1 --mac-aging-s 60`, two vhost-user ports added on s1
#     with `port add ... --switch s1`, two vnet-pktgen guests on them:
#     b broadcasts 1 frame (a has no front end yet), then a sends N frames
#     to b's MAC: b receives N, all verified; `switch list` counts learned 2,
#     flooded 1, 2 MACs, mac_aging_s 60, one no_destination drop (b's
#     broadcast found every other port down); a scrape of vnetd's
#     metrics endpoint gives the same values for switch="s1" (MAC entries,
#     table size, every event counter, drops by reason);
#   - `switch del s1` while a and b are on it is refused with the exact
#     message naming them, and changes nothing; after `port del a`,
#     `port del b` it succeeds, `switch list` is empty again and the
#     metrics have no series of s1 any more;
#   - every error is exact and changes nothing (switch list and vnetd's fd
#     count the same before and after): a duplicate name, a bad setting, an
#     unknown key, deleting an unknown switch, a port on a deleted switch;
#   - reload: a [[switch]] added to the file is made (vnetctl reload says
#     so), one whose keys changed is refused with the exact reason and
#     nothing changes, one gone from the file is removed; a switch added
#     with vnetctl stays through every reload;
#   - 100 cycles of switch add, a port added on it, port del, switch del
#     (one JSON-RPC connection): vnetd's fd count is the same after as
#     before, no series of the cycled switch is left in the metrics; vnetd
#     exits 0 (with ASan: LeakSanitizer finds nothing).
#
# Usage: test_switch_add_del.sh BUILD_DIR   (as root)
#   VNET_TEST_FRAMES  N (default 20000)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}
RATE=50000
CYCLES=100
# A receiving vnet-pktgen on a busy machine may not run for milliseconds:
# the switch holds frames for it up to 200 ms (not the default 100 us), so
# the counts stay exact (see test_switch.sh).
HOLD_US=200000

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnet-switch-add-del
CTL="$WORK/vnetd.ctl"
MAC_A=02:00:00:00:0a:0a
MAC_B=02:00:00:00:0b:0b
BROADCAST=ff:ff:ff:ff:ff:ff
fail_log "$WORK/vnetd.log" 30

# A config file with no port and no switch: the boot state is empty.
cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"
metrics_address = "127.0.0.1:0"
TOML
start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
wait_control
wait_for 10 "vnetd did not log its metrics address" log_has "$WORK/vnetd.log" "metrics at http://"
METRICS_URL=$(grep -oE "metrics at http://[0-9.:]+/metrics" "$WORK/vnetd.log" | head -n 1 | cut -d' ' -f3)
scrape() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$METRICS_URL"; }
# switch_series NAME: the number of vnetd_switch_* samples labelled switch="NAME".
switch_series() { scrape | grep -c "^vnetd_switch_[a-z_]*{.*switch=\"$1\"" || true; }

switch_names() { ctl --json switch list | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)))'; }
[ "$(ctl --json switch list | tr -d ' \n')" = "[]" ] || fail "a fresh vnetd has switches: $(switch_names)"
[ "$(ctl --json port list | tr -d ' \n')" = "[]" ] || fail "a fresh vnetd has ports"
ok "vnetd started with no port and no switch"

# ---- a switch, two ports on it, traffic ---------------------------------------
out=$(ctl switch add s1 --mac-aging-s 60 --destination-hold-us "$HOLD_US") || fail "switch add s1: $out"
[ "$out" = "switch s1 added" ] || fail "switch add said: $out"
[ "$(switch_names)" = "s1" ] || fail "switches after add: $(switch_names)"
for p in a b; do
    out=$(ctl port add vhost-user "$p" --socket-path "$WORK/$p.sock" --switch s1) ||
        fail "port add $p: $out"
done
ok "switch s1 with ports a and b"

pktgen() { timeout 120 "$PKTGEN" --connect-timeout 20 --stats-interval 0 "$@"; }
pktgen --socket-path "$WORK/b.sock" --tx --count 1 --src-mac "$MAC_B" --dst-mac "$BROADCAST" \
    >"$WORK/tx-learn.out" 2>"$WORK/tx-learn.log" || fail "b's broadcast: $(tail -3 "$WORK/tx-learn.log")"
bg_start --out "$WORK/rx-b.out" --err "$WORK/rx-b.log" "$PKTGEN" --connect-timeout 20 \
    --socket-path "$WORK/b.sock" --rx
RX_B=$BG_PID
wait_for 20 "the receiving vnet-pktgen on b did not come up" log_has "$WORK/rx-b.log" "link up"
pktgen --socket-path "$WORK/a.sock" --tx --count "$N" --rate "$RATE" --src-mac "$MAC_A" \
    --dst-mac "$MAC_B" >"$WORK/tx-a.out" 2>"$WORK/tx-a.log" || fail "a's frames: $(tail -3 "$WORK/tx-a.log")"
sleep 1
stop_pid "$RX_B" INT
check_equal "a -> b" "a_tx=$(pktgen_value "$WORK/tx-a.out" tx-packets)" \
    "b_rx=$(pktgen_value "$WORK/rx-b.out" rx-packets)" \
    "b_rx_verified=$(pktgen_value "$WORK/rx-b.out" rx-verified)" "N=$N"

ctl switch list || fail "switch list"
ctl --json switch list >"$WORK/switches.json" || fail "switch list --json"
python3 - "$WORK/switches.json" "$HOLD_US" <<'PY' || fail "switch list after traffic"
import json, sys
switches = json.load(open(sys.argv[1]))
assert [s["name"] for s in switches] == ["s1"], switches
s = switches[0]
c = s["counters"]
assert (c["learned"], c["moved"], c["aged"], c["table_full"], c["flooded"]) == (2, 0, 0, 0, 1), c
# b's broadcast came while a had no front end yet: a flood that found every
# other port down reached no one and is the one no_destination drop.
assert {k: v for k, v in c["drops"].items() if v} == {"no_destination": 1}, c["drops"]
assert s["ports"] == ["a", "b"], s["ports"]
assert (s["mac_entries"], s["mac_table_size"], s["mac_aging_s"]) == (2, 8192, 60), s
print("ok: switch list: learned 2, flooded 1, 2 MACs of 8192, aging 60 s, ports a b, 1 drop (no_destination)")
PY
scrape >"$WORK/metrics.txt" || fail "scraping $METRICS_URL"
python3 - "$WORK/metrics.txt" "$WORK/switches.json" <<'PY' || fail "the switch metrics disagree with switch list"
import json, re, sys
samples = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(vnetd_switch_[a-z_]+)\{([^}]*)\} (\S+)$', line.strip())
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if labels.get("switch") == "s1":
            samples[(m.group(1), labels.get("reason", ""))] = float(m.group(3))
s = json.load(open(sys.argv[2]))[0]
c = s["counters"]
want = {("vnetd_switch_mac_entries", ""): s["mac_entries"],
        ("vnetd_switch_mac_table_size", ""): s["mac_table_size"]}
for name in ("learned", "moved", "aged", "table_full", "flooded"):
    want[(f"vnetd_switch_{name}_total", "")] = c[name]
for reason, n in c["drops"].items():
    want[("vnetd_switch_drops_total", reason)] = n
assert samples == {k: float(v) for k, v in want.items()}, (samples, want)
print(f"ok: {len(samples)} switch series of s1 = switch list (learned {c['learned']}, flooded {c['flooded']}, mac_entries {s['mac_entries']})")
PY

# ---- switch del refused while ports are on it, then allowed --------------------
FDS=$(fd_count "$VNETD_PID")
expect_error() { # expect_error MESSAGE VNETCTL-ARGS...: exact, and the switches unchanged
    local want=$1 before out
    shift
    before=$(switch_names)
    out=$(ctl "$@" 2>&1) && fail "vnetctl $* succeeded: $out"
    [ "$out" = "vnetctl: $want" ] || fail "vnetctl $*: '$out', expected 'vnetctl: $want'"
    [ "$(switch_names)" = "$before" ] || fail "vnetctl $* changed the switches: $(switch_names)"
    ok "vnetctl $*: $want"
}
expect_error "switch 's1' still has ports: a, b (remove them first: vnetctl port del NAME)" \
    switch del s1
ctl --json switch list | python3 -c '
import json, sys
s = json.load(sys.stdin)[0]
assert s["ports"] == ["a", "b"] and s["mac_entries"] == 2, s' || fail "a refused switch del changed s1"
ctl port del a >/dev/null || fail "port del a"
expect_error "switch 's1' still has ports: b (remove them first: vnetctl port del NAME)" switch del s1
ctl port del b >/dev/null || fail "port del b"
out=$(ctl switch del s1) || fail "switch del s1: $out"
[ "$out" = "switch s1 removed" ] || fail "switch del said: $out"
[ "$(ctl --json switch list | tr -d ' \n')" = "[]" ] || fail "switch list after del: $(switch_names)"
log_has "$WORK/vnetd.log" "switch s1: removed" || fail "vnetd did not log the removal"
check_equal "series of s1 after switch del" "metrics=$(switch_series s1)" "zero=0"
ok "switch del s1 refused with ports on it, done once they were gone; switch list empty"

# ---- errors: exact, and nothing changes ----------------------------------------
ctl switch add s2 >/dev/null || fail "switch add s2"
FDS=$(fd_count "$VNETD_PID")
expect_error "a switch named 's2' exists already" switch add s2
expect_error "a switch named 's2' exists already" switch add s2 --mac-table-size 16
expect_error "switch 's3': mac_table_size must be 1..1048576, not '0'" \
    switch add s3 --mac-table-size 0
expect_error "switch 's3': mac_aging_s must be 1..1000000, not 'soon'" \
    switch add s3 --mac-aging-s soon
expect_error "switch 's3': destination_hold_us must be 0..1000000, not '1000001'" \
    switch add s3 --destination-hold-us 1000001
expect_error "unknown parameter 'vlan' (switch.add takes name and the [[switch]] keys of the config file)" call switch.add '{"name":"s3","vlan":10}'
expect_error "a [[switch]] has no name" call switch.add '{"name":""}'
expect_error "no switch named 's1'" switch del s1
expect_error "port 'c': switch 's1' is not defined (no [[switch]] of that name)" \
    port add vhost-user c --socket-path "$WORK/c.sock" --switch s1
[ "$(ctl --json port list | tr -d ' \n')" = "[]" ] || fail "a refused request added a port"
[ ! -e "$WORK/c.sock" ] || fail "a refused port add left its socket"
check_equal "vnetd fds" "before=$FDS" "after-refused-requests=$(fd_count "$VNETD_PID")"

# ---- reload: [[switch]] tables added, changed, removed ---------------------------
write_config() { # write_config [SWITCH-TABLE...]: the boot file plus these tables
    {
        printf '[daemon]\ncontrol_socket = "%s"\nmetrics_address = "127.0.0.1:0"\n' "$CTL"
        for table in "$@"; do printf '[[switch]]\n%s\n' "$table"; done
    } >"$WORK/vnetd.toml"
}
write_config 'name = "f1"
mac_table_size = 512'
out=$(ctl --json reload) || fail "reload adding f1: $out"
echo "$out" | python3 -c 'import json,sys; r = json.load(sys.stdin); assert r["switches_added"] == ["f1"] and r["switches_removed"] == [], r' ||
    fail "reload adding f1 answered $out"
[ "$(switch_names)" = "s2 f1" ] || fail "switches after the reload: $(switch_names)"
ctl --json switch list | python3 -c 'import json,sys; f = json.load(sys.stdin)[1]; assert f["mac_table_size"] == 512, f' ||
    fail "f1 does not have the file's mac_table_size"
write_config 'name = "f1"
mac_table_size = 1024'
expect_error "reload refused, nothing changed: switch 'f1' changed (mac_table_size): remove it and its ports from the file and reload, then add them back" reload
write_config
out=$(ctl --json reload) || fail "reload removing f1: $out"
echo "$out" | python3 -c 'import json,sys; r = json.load(sys.stdin); assert r["switches_removed"] == ["f1"] and r["switches_added"] == [], r' ||
    fail "reload removing f1 answered $out"
[ "$(switch_names)" = "s2" ] || fail "switches after the second reload: $(switch_names)"
ok "reload: [[switch]] f1 added, its change refused, removed; s2 (vnetctl's) stayed"
out=$(ctl switch del s2) || fail "switch del s2: $out"

# ---- add/del cycles: nothing leaks --------------------------------------------
cycles() { # cycles COUNT: switch add, a port on it, port del, switch del; one connection
    python3 - "$CTL" "$WORK" "$1" <<'PY'
import json, socket, sys
ctl, work, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX); s.connect(ctl); s.settimeout(30); f = s.makefile("rb")
n = 0
def call(method, params):
    global n
    n += 1
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n").encode())
    r = json.loads(f.readline())
    if "error" in r:
        sys.exit(f"{method} {params}: {r['error']}")
for i in range(count):
    call("switch.add", {"name": "cyc", "mac_table_size": 4096})
    call("port.add", {"name": "cp", "type": "vhost-user", "socket_path": f"{work}/cp.sock",
                      "switch": "cyc"})
    call("port.del", {"name": "cp"})
    call("switch.del", {"name": "cyc"})
PY
}
cycles 5 || fail "warm-up cycles"
FDS=$(fd_count "$VNETD_PID")
cycles "$CYCLES" || fail "switch add/del cycles"
check_equal "vnetd fds" "before=$FDS" "after-cycles=$(fd_count "$VNETD_PID")"
[ "$(ctl --json switch list | tr -d ' \n')" = "[]" ] || fail "switches after the cycles: $(switch_names)"
[ "$(ctl --json port list | tr -d ' \n')" = "[]" ] || fail "ports after the cycles"
check_equal "series of cyc after the cycles" "metrics=$(switch_series cyc)" "zero=0"
ok "$CYCLES switch add/del cycles (a port on it each time): fds $FDS = $FDS"

stop_pid "$VNETD_PID" TERM || fail "vnetd exit status $? on SIGTERM"
pass "switch add/del at run time: traffic through s1 ($N = $N), refusals exact, $CYCLES cycles without a leak"
