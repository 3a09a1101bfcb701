#!/bin/bash
# vnetd's Prometheus endpoint (--metrics-address) under traffic, read by
# curl and scraped by a real Prometheus server:
#
#   - vnetd (vhost-user vm0 -> tap) listens on :0 (every address, IPv6
#     and IPv4) and logs the port it got; curl reads /metrics over
#     127.0.0.1 and over [::1]; the text format: HELP and TYPE
#     lines, the label names port, queue, direction, reason, kind, worker,
#     the process_* families; no series for queue pairs nobody enabled;
#   - deploy/prometheus/vnetd.rules.yml passes its promtool tests, names
#     only metrics vnetd exports, and evaluates without error in the
#     Prometheus server below;
#   - with vnet-pktgen (one queue pair of the 8 offered) connected, vm0 has
#     exactly 73 series;
#   - while vnet-pktgen --tx sends N frames, vnetd_port_connections{port="vm0"}
#     is 1; after it, every burst-size histogram's _count equals the
#     bursts counter and its sum the packets, buckets are cumulative;
#     worker 0 was busy for some time;
#   - a Prometheus server (started by hand: config, storage and a listen
#     address in the work directory, scrape interval 1 s) scrapes vnetd;
#     once traffic has stopped and a scrape newer than that has landed,
#     the query
#         sum by (port, direction) (vnetd_port_packets_total)
#     through /api/v1/query gives, for both ports and both directions,
#     exactly what `vnetctl --json stats` says (summed over queues), and
#     vm0 rx = tap tx = N.
#
# Everything runs in one network namespace with its own loopback, so the
# fixed Prometheus port there collides with nothing on the host.
#
# Usage: test_metrics.sh BUILD_DIR   (as root)
#   VNET_TEST_FRAMES  N (default 20000, at 5000 frames/s: 4 s of traffic)
set -u

PROMETHEUS=/usr/bin/prometheus
HERE=$(cd "$(dirname "$0")" && pwd)
N=${VNET_TEST_FRAMES:-20000}
PROM_ADDRESS=127.0.0.1:9090
QUERY='sum by (port, direction) (vnetd_port_packets_total)'

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || skip "needs root (netns, tap)"
for tool in ip python3 curl; do
    command -v "$tool" >/dev/null || skip "$tool not found (scripts/install-deps.sh)"
done
[ -x "$PROMETHEUS" ] || skip "$PROMETHEUS not found (scripts/install-deps.sh installs prometheus)"
need_built "$VNETD" "$VNETCTL" "$PKTGEN"

work_dir vnetd-metrics
NS=$(ns_name vmet)
netns_new "$NS"
# IPv6 on the loopback alone (::1 for the IPv6 scrape): the tap, made later,
# keeps the namespace's default, IPv6 off, so it carries no frame of the
# kernel's own
ip netns exec "$NS" sysctl -qw net.ipv6.conf.lo.disable_ipv6=0 || fail "IPv6 on lo in $NS"
ip -n "$NS" link set lo up || fail "lo up in $NS"
TAP=$(link_name vmet)
SOCK="$WORK/vm.sock"
CTL="$WORK/vnetd.ctl"
in_ns() { ip netns exec "$NS" "$@"; }
ctl() { in_ns "$VNETCTL" --socket "$CTL" "$@"; }

# --- vnetd, its endpoint on any free port of every address of the namespace
start_vnetd "$WORK/vnetd.log" --netns "$NS" --socket-path "$SOCK" --tap "$TAP" \
    --control-socket "$CTL" --metrics-address :0
wait_for 10 "vnetd did not log its metrics address" log_has "$WORK/vnetd.log" "metrics at http://"
LOGGED=$(grep -oE "http://localhost:[0-9]+/metrics" "$WORK/vnetd.log" | head -n 1)
[[ "$LOGGED" =~ :[1-9][0-9]*/metrics$ ]] || fail "vnetd logged no real port: '$LOGGED'"
PORT=${LOGGED#http://localhost:}
PORT=${PORT%/metrics}
TARGET=127.0.0.1:$PORT
METRICS=http://$TARGET/metrics
ip -n "$NS" link set "$TAP" up || fail "$TAP up"
scrape() { in_ns curl -sSf --max-time 5 "$METRICS"; }
scrape >"$WORK/idle.txt" || fail "curl $METRICS failed"
echo "vnetd metrics at $LOGGED: $(wc -l <"$WORK/idle.txt") lines before traffic"
# the same endpoint over IPv6 (-g: the brackets are not a curl glob)
in_ns curl -sSfg --max-time 5 "http://[::1]:$PORT/metrics" >"$WORK/idle-v6.txt" ||
    fail "curl http://[::1]:$PORT/metrics failed"
log_has "$WORK/idle-v6.txt" '^vnetd_port_info\{port="vm0",kind="vhost-user"\} 1$' ||
    fail "the scrape over [::1] has no vnetd_port_info for vm0"
ok "one endpoint, :$PORT: scraped over 127.0.0.1 and over [::1]"

# --- the text format: HELP and TYPE per family, the stats' label names
for family in vnetd_port_packets_total:counter vnetd_port_bytes_total:counter \
    vnetd_port_bursts_total:counter vnetd_port_drops_total:counter \
    vnetd_port_burst_size:histogram vnetd_port_info:gauge vnetd_port_queue_pairs:gauge \
    vnetd_port_connections:gauge vnetd_worker_busy_seconds_total:counter \
    vnetd_worker_idle_seconds_total:counter vnetd_worker_rounds_total:counter \
    vnetd_worker_sleeps_total:counter process_cpu_seconds_total:counter \
    process_resident_memory_bytes:gauge process_open_fds:gauge process_max_fds:gauge \
    process_start_time_seconds:gauge; do
    name=${family%%:*}
    log_has "$WORK/idle.txt" "^# HELP $name " || fail "no HELP line for $name"
    log_has "$WORK/idle.txt" "^# TYPE $name ${family#*:}$" || fail "no TYPE ${family#*:} line for $name"
done
for line in \
    "^vnetd_port_packets_total\{port=\"vm0\",queue=\"0\",direction=\"rx\"\} 0$" \
    "^vnetd_port_packets_total\{port=\"$TAP\",queue=\"0\",direction=\"tx\"\} 0$" \
    "^vnetd_port_drops_total\{port=\"vm0\",queue=\"0\",direction=\"tx\",reason=\"no_destination\"\} 0$" \
    "^vnetd_port_burst_size_bucket\{port=\"vm0\",queue=\"0\",direction=\"rx\",le=\"\+Inf\"\} 0$" \
    "^vnetd_port_info\{port=\"vm0\",kind=\"vhost-user\"\} 1$" \
    "^vnetd_port_info\{port=\"$TAP\",kind=\"tap\"\} 1$" \
    "^vnetd_port_queue_pairs\{port=\"vm0\"\} 8$" \
    "^vnetd_port_connections\{port=\"vm0\"\} 0$" \
    "^vnetd_worker_rounds_total\{worker=\"0\"\} [0-9]+$"; do
    log_has "$WORK/idle.txt" "$line" || fail "no line matching $line in the scrape"
done
! grep -qE 'queue="[1-7]"' "$WORK/idle.txt" ||
    fail "queue pairs no front end enabled have series: $(grep -cE 'queue="[1-7]"' "$WORK/idle.txt")"
ok "text format: HELP/TYPE lines, labels port, queue, direction, reason, kind, worker"

# --- the shipped alert rules: their own tests, and every metric they name
# is one vnetd exports
RULES="$HERE/../../deploy/prometheus"
(cd "$RULES" && promtool test rules vnetd.rules.test.yml) >"$WORK/promtool.out" 2>&1 ||
    fail "promtool test rules: $(cat "$WORK/promtool.out")"
for name in $(grep -oE 'vnetd_[a-z_]+' "$RULES/vnetd.rules.yml" | sort -u); do
    log_has "$WORK/idle.txt" "^# TYPE $name " || fail "the rules name $name, which vnetd does not export"
done
ok "promtool test rules passes; the rules name only metrics vnetd exports"

# --- Prometheus, by hand (no systemd here): its config, storage and
# listen address are this test's
PROM_DIR="$WORK/prometheus"
mkdir -p "$PROM_DIR/data" || fail "mkdir $PROM_DIR/data"
printf '%s\n' "global:" "  scrape_interval: 1s" "  scrape_timeout: 1s" "  evaluation_interval: 1s" "rule_files: [\"$RULES/vnetd.rules.yml\"]" \
    "scrape_configs:" "  - job_name: vnetd" "    static_configs:" "      - targets: [\"$TARGET\"]" \
    >"$PROM_DIR/prometheus.yml"
bg_start --log "$WORK/prometheus.log" ip netns exec "$NS" "$PROMETHEUS" \
    --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
    --web.listen-address="$PROM_ADDRESS"
PROM_PID=$BG_PID
wait_for 30 "Prometheus did not get ready" in_ns curl -sSf --max-time 2 -o /dev/null \
    "http://$PROM_ADDRESS/-/ready"
# prom_query EXPR: the API's JSON answer to an instant query at now.
prom_query() {
    in_ns curl -sSf --max-time 5 "http://$PROM_ADDRESS/api/v1/query" --data-urlencode "query=$1"
}
# prom_scalar EXPR: the value of a query that has one sample ("" if not).
prom_scalar() {
    prom_query "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "")'
}
target_up() { [ "$(prom_scalar 'up{job="vnetd"}')" = 1 ]; }
wait_for 20 "Prometheus never scraped vnetd successfully" target_up
ok "Prometheus scrapes vnetd (up = 1)"

# --- traffic: pktgen -> vm0 -> tap; the port shows its front end meanwhile
bg_start --log "$WORK/pktgen.log" ip netns exec "$NS" "$PKTGEN" --socket-path "$SOCK" --tx \
    --count "$N" --rate 5000 --size 64 --stats-interval 0 --connect-timeout 10
PKTGEN_PID=$BG_PID
connected() { scrape | grep -qE '^vnetd_port_connections\{port="vm0"\} 1$'; }
wait_for 10 "vnetd_port_connections never showed vm0 connected" connected
ok "vnetd_port_connections{port=\"vm0\"} is 1 under traffic"
# pktgen enables one of the 8 queue pairs vm0 offers: one queue pair of
# series (metrics_test.cpp counts them: 3 per port + 35 per direction)
scrape >"$WORK/one-pair.txt" || fail "curl $METRICS with pktgen connected"
vm0_series=$(grep -v '^#' "$WORK/one-pair.txt" | grep -c 'port="vm0"')
[ "$vm0_series" = 73 ] || fail "vm0 with one enabled queue pair has $vm0_series series, expected 73"
ok "vm0, 8 queue pairs offered, 1 enabled: $vm0_series series ($(grep -vc '^#' "$WORK/one-pair.txt") in the scrape)"
forwarded() { scrape | grep -qE "^vnetd_port_packets_total\{port=\"$TAP\",queue=\"0\",direction=\"tx\"\} $N$"; }
wait_for 30 "the endpoint never showed $TAP tx = $N" forwarded
stop_pid "$PKTGEN_PID" INT || true

# Traffic has stopped: the counters no longer move, and whatever Prometheus
# scrapes from now on must agree with vnetctl exactly.
ctl --json stats >"$WORK/vnetctl.json" || fail "vnetctl --json stats"
stopped_at=$(date +%s.%N)
scrape >"$WORK/after.txt" || fail "curl $METRICS after traffic"
scraped_since_stop() {
    python3 -c 'import sys; sys.exit(0 if float(sys.argv[1] or 0) > float(sys.argv[2]) else 1)' \
        "$(prom_scalar 'timestamp(up{job="vnetd"})')" "$stopped_at"
}
wait_for 10 "Prometheus did not scrape again after traffic stopped" scraped_since_stop
prom_query "$QUERY" >"$WORK/query.json" || fail "query $QUERY"
ctl --json stats >"$WORK/vnetctl-again.json" || fail "vnetctl --json stats (again)"

python3 - "$WORK/vnetctl.json" "$WORK/vnetctl-again.json" "$WORK/query.json" "$TAP" "$N" <<'PY' ||
import json, sys
before, again, query, tap, n = sys.argv[1:6]
def vnetctl_sums(path):
    stats = json.load(open(path))
    return {(p["name"], d): sum(q[d]["packets"] for q in p["queues"])
            for p in stats["ports"] for d in ("rx", "tx")}
want = vnetctl_sums(before)
if vnetctl_sums(again) != want:
    sys.exit(f"the counters moved after traffic stopped: {want}, then {vnetctl_sums(again)}")
answer = json.load(open(query))
if answer["status"] != "success":
    sys.exit(f"the query failed: {answer}")
got = {(r["metric"]["port"], r["metric"]["direction"]): r["value"][1]
       for r in answer["data"]["result"]}
if got != {k: str(v) for k, v in want.items()}:
    sys.exit(f"Prometheus {got} != vnetctl {want}")
if want[("vm0", "rx")] != int(n) or want[(tap, "tx")] != int(n):
    sys.exit(f"vm0 rx {want[('vm0', 'rx')]}, {tap} tx {want[(tap, 'tx')]}, sent {n}")
print("query answer = vnetctl --json stats (summed over queues):")
for (port, direction), packets in sorted(got.items()):
    print(f'  {{direction="{direction}", port="{port}"}} {packets}')
PY
    fail "Prometheus and vnetctl disagree"
echo "query: $QUERY"

# --- the scrape after traffic: histograms agree with the counters; busy time
python3 - "$WORK/after.txt" "$WORK/vnetctl.json" <<'PY' || fail "histogram or worker metrics wrong"
import json, re, sys
text, stats = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
samples = {}
for line in text.splitlines():
    m = re.match(r'^([a-z_]+)\{(.*)\} (\S+)$', line)
    if m:
        samples[(m[1], m[2])] = float(m[3])
bursts = 0
for p in stats["ports"]:
    for q in p["queues"]:
        for d in ("rx", "tx"):
            labels = f'port="{p["name"]}",queue="{q["queue"]}",direction="{d}"'
            c = q[d]
            if ("vnetd_port_packets_total", labels) not in samples:
                # no series: a queue pair never enabled, that counted nothing
                assert q["queue"] != 0 and c["packets"] == 0 and sum(c["drops"].values()) == 0, labels
                continue
            assert samples[("vnetd_port_packets_total", labels)] == c["packets"], labels
            assert samples[("vnetd_port_bursts_total", labels)] == c["bursts"], labels
            assert samples[("vnetd_port_burst_size_count", labels)] == c["bursts"], labels
            assert samples[("vnetd_port_burst_size_sum", labels)] == c["packets"], labels
            cumulative = 0
            for le, size in [("1", "1"), ("3", "2-3"), ("7", "4-7"), ("15", "8-15"),
                             ("31", "16-31"), ("63", "32-63"), ("+Inf", "64+")]:
                cumulative += c["burst_sizes"][size]
                got = samples[("vnetd_port_burst_size_bucket", f'{labels},le="{le}"')]
                assert got == cumulative, (labels, le, got, cumulative)
            for reason, dropped in c["drops"].items():
                assert samples[("vnetd_port_drops_total", f'{labels},reason="{reason}"')] == dropped
            bursts += c["bursts"]
assert bursts > 0, "no bursts at all"
busy = samples[("vnetd_worker_busy_seconds_total", 'worker="0"')]
idle = samples[("vnetd_worker_idle_seconds_total", 'worker="0"')]
assert busy > 0 and idle > 0, (busy, idle)
print(f"scrape = vnetctl for every queue: packets, bursts, histogram ({bursts} bursts), drops;"
      f" worker 0 busy {busy:.4f} s, idle {idle:.1f} s")
PY

# The rules ran on the real series: each evaluated (every second) without error.
rules_ok() {
    in_ns curl -sSf --max-time 5 "http://$PROM_ADDRESS/api/v1/rules" >"$WORK/rules.json" &&
        python3 - "$WORK/rules.json" <<'PY'
import json, sys
rules = [r for g in json.load(open(sys.argv[1]))["data"]["groups"] for r in g["rules"]]
bad = [(r["name"], r["health"], r.get("lastError")) for r in rules if r["health"] != "ok"]
if len(rules) != 4 or bad:
    sys.exit(f"{len(rules)} rules, not ok: {bad}")
print("rules evaluated on vnetd's series:", ", ".join(r["name"] for r in rules))
PY
}
wait_for 10 "the shipped rules do not evaluate: $(cat "$WORK/rules.json")" rules_ok

stop_pid "$PROM_PID" TERM || fail "Prometheus exit status $? on SIGTERM"
stop_pid "$VNETD_PID" TERM || fail "vnetd exit status $? on SIGTERM"
pass "metrics: text format, histograms, Prometheus query = vnetctl stats ($N packets)"
