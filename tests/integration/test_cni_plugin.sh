#!/bin/bash
# vnetd-cni called as a runtime calls it (CNI_* env + config on stdin), as
# root, with netns made here and a vnetd started here with switch s0:
#   - VERSION advertises 0.3.1, 0.4.0, 1.0.0, 1.1.0;
#   - exact errors: no CNI_COMMAND (4), ADD without its variables (4), bad
#     JSON (6), unknown iftype (7), an unknown cniVersion (1), STATUS with
#     vnetd down (50), ADD with vnetd down (11); STATUS with vnetd up: 0;
#   - tap: ADD with host-local IPAM (result 1.1.0 and 0.4.0 shapes, the
#     address and route in the pod), CHECK, DEL, DEL again; two pods on s0
#     ping each other through vnetd; chained with Debian's tuning plugin;
#   - vhostuser: ADD (socketPath in the result, the device-info file, the
#     port in vnetd on its socket), CHECK, DEL, DEL again;
#   - GC with cni.dev/valid-attachments removes exactly the stale ones;
#   - 200 ADD/DEL cycles: vnetd's ports, fds and host-local's store as before.
# Usage: test_cni_plugin.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
CYCLES=${VNET_TEST_CNI_CYCLES:-200}
PLUGINS=/usr/lib/cni

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
command -v busybox >/dev/null || fail "busybox not found (scripts/install-deps.sh installs busybox-static)"
for bin in "$VNETD" "$VNETCTL" "$CNI" "$PLUGINS/host-local" "$PLUGINS/tuning"; do
    [ -x "$bin" ] || fail "$bin not there (scripts/install-deps.sh installs containernetworking-plugins)"
done

work_dir vnet-cni
CTL="$WORK/vnetd.ctl"
fail_log "$WORK/vnetd.log" 30

NS1=$(ns_name cni a)
NS2=$(ns_name cni b)
netns_new "$NS1"
netns_new "$NS2"

# conf VERSION IFTYPE [EXTRA_JSON]: a network config of this run.
conf() {
    local extra=${3:-}
    cat <<JSON
{"cniVersion": "$1", "name": "vnet-test", "type": "vnetd-cni",
 "controlSocket": "$CTL", "stateDir": "$WORK/state", "socketDir": "$WORK/s",
 "host": {"iftype": "$2", "bridge": {"bridgeName": "s0"}},
 "ipam": {"type": "host-local", "subnet": "10.89.0.0/24", "dataDir": "$WORK/ipam",
          "routes": [{"dst": "10.90.0.0/16"}]}${extra}}
JSON
}
# cni COMMAND CONTAINERID NETNS IFNAME: stdin is the config; stdout to
# $WORK/out, exit status in RC.
cni() {
    CNI_COMMAND=$1 CNI_CONTAINERID=$2 CNI_NETNS=$3 CNI_IFNAME=$4 CNI_PATH=$PLUGINS \
        "$CNI" >"$WORK/out"
    RC=$?
}
out() { cat "$WORK/out"; }
jq_out() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$WORK/out" "$1"; }
# expect_error CODE MSG: the last call failed with exactly this.
expect_error() {
    [ "$RC" != 0 ] || fail "expected error $1 '$2', got success: $(out)"
    [ "$(jq_out 'd["code"]')" = "$1" ] || fail "expected code $1, got $(out)"
    [ "$(jq_out 'd["msg"]')" = "$2" ] || fail "expected msg '$2', got $(out)"
    ok "error $1: $2"
}
expect_success() { [ "$RC" = 0 ] || fail "$1 failed: $(out)"; }

# ---- before vnetd: VERSION, env and config errors, STATUS 50, ADD 11 --------
CNI_COMMAND=VERSION "$CNI" </dev/null >"$WORK/out" || fail "VERSION failed: $(out)"
[ "$(out)" = '{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}' ] ||
    fail "VERSION: $(out)"
ok "VERSION: $(out)"
"$CNI" </dev/null >"$WORK/out"; RC=$?
expect_error 4 "required env variables [CNI_COMMAND] missing"
CNI_COMMAND=ADD "$CNI" </dev/null >"$WORK/out"; RC=$?
expect_error 4 "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME] missing"
cni ADD c0 "/run/netns/$NS1" eth0 < <(echo '{"cniVersion": ')
[ "$(jq_out 'd["code"]')" = 6 ] || fail "bad JSON: $(out)"
jq_out 'd["msg"]' | grep -q "^failed to decode the network configuration: " || fail "bad JSON: $(out)"
ok "bad JSON: code 6, $(jq_out 'd["msg"]')"
cni ADD c0 "/run/netns/$NS1" eth0 < <(conf 1.1.0 macvlan)
expect_error 7 "unknown host.iftype 'macvlan' (vhostuser or tap)"
cni ADD c0 "/run/netns/$NS1" eth0 < <(conf 9.9.9 tap)
expect_error 1 'incompatible CNI versions: config is "9.9.9", plugin supports ["0.3.1","0.4.0","1.0.0","1.1.0"]'
conf 1.1.0 tap | CNI_COMMAND=STATUS "$CNI" >"$WORK/out"; RC=$?
expect_error 50 "vnetd's control socket does not answer"
cni ADD c0 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap)
expect_error 11 "vnetd's control socket does not answer"
[ -z "$(ls "$WORK/ipam/vnet-test" 2>/dev/null | grep -v lock)" ] || fail "ADD with vnetd down left addresses allocated"

# ---- vnetd with switch s0 ----------------------------------------------------
cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"
TOML
start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
wait_control
ctl switch add s0 >/dev/null || fail "switch add s0"
conf 1.1.0 tap | CNI_COMMAND=STATUS "$CNI" >"$WORK/out"; RC=$?
expect_success STATUS
ok "STATUS with vnetd up: exit 0, no output"
port_count() { ctl --json port list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
ipam_count() { find "$WORK/ipam" -type f ! -name lock ! -name 'last_reserved_ip*' 2>/dev/null | wc -l; }
PORTS0=$(port_count)
FDS0=$(fd_count "$VNETD_PID")

# ---- tap: ADD, CHECK, DEL, DEL -----------------------------------------------
cni ADD pod1 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap)
expect_success "tap ADD"
RESULT1=$(out)
echo "tap ADD result: $RESULT1"
[ "$(jq_out 'd["interfaces"][0]["name"]')" = eth0 ] || fail "result interface: $RESULT1"
[ "$(jq_out 'd["ips"][0]["interface"]')" = 0 ] || fail "result ips: $RESULT1"
IP1=$(jq_out 'd["ips"][0]["address"]')
[ "${IP1%/*}" != "$IP1" ] || fail "no address in $RESULT1"
ip -n "$NS1" -o addr show dev eth0 | grep -q "inet $IP1 " || fail "eth0 in $NS1 lacks $IP1: $(ip -n "$NS1" addr)"
ip -n "$NS1" route | grep -q "^10.90.0.0/16 via 10.89.0.1 dev eth0" || fail "route missing: $(ip -n "$NS1" route)"
[ "$(port_count)" = $((PORTS0 + 1)) ] || fail "vnetd has $(port_count) ports after ADD"
ok "tap ADD: eth0 in $NS1 with $IP1, route 10.90.0.0/16 via 10.89.0.1, one vnetd port"
cni ADD pod2 "/run/netns/$NS2" eth0 < <(conf 0.4.0 tap)
expect_success "tap ADD (0.4.0)"
[ "$(jq_out 'd["cniVersion"]')" = 0.4.0 ] || fail "0.4.0 result: $(out)"
[ "$(jq_out 'd["ips"][0]["version"]')" = 4 ] || fail "0.4.0 result has no ips[].version: $(out)"
IP2=$(jq_out 'd["ips"][0]["address"]')
ok "tap ADD at 0.4.0: $(out)"
ip netns exec "$NS1" busybox ping -c 3 -W 2 "${IP2%/*}" >"$WORK/ping" 2>&1 ||
    fail "ping $NS1 -> $NS2 through s0: $(cat "$WORK/ping")"
ok "ping ${IP1%/*} -> ${IP2%/*} through vnetd switch s0: $(grep -oE '[0-9]+ packets received' "$WORK/ping")"

cni CHECK pod1 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap ", \"prevResult\": $RESULT1")
expect_success "tap CHECK"
ok "tap CHECK"
ip -n "$NS1" link set eth0 down
cni CHECK pod1 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap ", \"prevResult\": $RESULT1")
expect_error 101 "interface eth0 in netns /run/netns/$NS1 is down"
ip -n "$NS1" link set eth0 up

cni DEL pod1 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap)
expect_success "tap DEL"
ip -n "$NS1" link show eth0 >/dev/null 2>&1 && fail "eth0 still in $NS1 after DEL"
cni DEL pod1 "/run/netns/$NS1" eth0 < <(conf 1.1.0 tap)
expect_success "tap DEL again"
[ -z "$(out)" ] || fail "DEL printed $(out)"
cni DEL pod1 "" eth0 < <(conf 1.1.0 tap)
expect_success "tap DEL without a netns"
cni DEL pod2 "/run/netns/$NS2" eth0 < <(conf 0.4.0 tap)
expect_success "tap DEL pod2"
ok "tap DEL, DEL again, DEL without netns: success, eth0 gone"

# ---- chained with tuning (Debian's speaks up to 1.0.0) -------------------------
cni ADD pod3 "/run/netns/$NS1" eth0 < <(conf 1.0.0 tap)
expect_success "ADD for the chain"
PREV=$(out)
printf '{"cniVersion":"1.0.0","name":"vnet-test","type":"tuning","sysctl":{"net.ipv4.conf.eth0.rp_filter":"2"},"prevResult":%s}' "$PREV" |
    CNI_COMMAND=ADD CNI_CONTAINERID=pod3 CNI_NETNS="/run/netns/$NS1" CNI_IFNAME=eth0 CNI_PATH=$PLUGINS \
        "$PLUGINS/tuning" >"$WORK/out" || fail "tuning after vnetd-cni: $(out)"
[ "$(ip netns exec "$NS1" sysctl -n net.ipv4.conf.eth0.rp_filter)" = 2 ] || fail "tuning did not set rp_filter"
[ "$(jq_out 'd["interfaces"][0]["name"]')" = eth0 ] || fail "tuning's result lost our interface: $(out)"
TUNED=$(out)
cni CHECK pod3 "/run/netns/$NS1" eth0 < <(conf 1.0.0 tap ", \"prevResult\": $TUNED")
expect_success "CHECK with tuning's result"
cni DEL pod3 "/run/netns/$NS1" eth0 < <(conf 1.0.0 tap)
expect_success "DEL of the chain"
ok "chained with tuning: rp_filter 2 on eth0, CHECK on tuning's result, DEL"

# ---- vhostuser ------------------------------------------------------------------
DEVINFO="$WORK/devinfo/pod4-net1.json"
VH=', "runtimeConfig": {"CNIDeviceInfoFile": "'$DEVINFO'"}'
cni ADD pod4 "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser "$VH")
expect_success "vhostuser ADD"
SOCK=$(jq_out 'd["interfaces"][0]["socketPath"]')
[ "$SOCK" = "$WORK/s/pod4/net1" ] || fail "socketPath: $(out)"
RESULT4=$(out)
test -S "$SOCK" || fail "vnetd does not listen on $SOCK"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d=={"type":"vhost-user","version":"1.1.0","vhost-user":{"mode":"client","path":sys.argv[2]}}, d' "$DEVINFO" "$SOCK" ||
    fail "device info: $(cat "$DEVINFO")"
ctl --json port list | grep -q "\"socket_path\": *\"$SOCK\"" || fail "vnetd has no port on $SOCK"
cni ADD pod5 "/run/netns/$NS1" net1 < <(conf 1.0.0 vhostuser "$VH")
expect_success "vhostuser ADD (1.0.0)"
jq_out '"socketPath" in d["interfaces"][0]' | grep -q False || fail "1.0.0 result has socketPath: $(out)"
cni CHECK pod4 "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser ", \"prevResult\": $RESULT4")
expect_success "vhostuser CHECK"
cni DEL pod4 "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser)
expect_success "vhostuser DEL"
[ ! -e "$SOCK" ] && [ ! -e "$DEVINFO" ] || fail "socket or device info left after DEL"
cni DEL pod4 "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser)
expect_success "vhostuser DEL again"
cni CHECK pod4 "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser ", \"prevResult\": $RESULT4")
expect_error 3 "no attachment of container pod4 as net1"
cni DEL pod5 "/run/netns/$NS1" net1 < <(conf 1.0.0 vhostuser)
expect_success "vhostuser DEL pod5"
ok "vhostuser: ADD ($SOCK, device info), CHECK, DEL, DEL again, CHECK after DEL: 3"

# ---- GC -------------------------------------------------------------------------
for p in g1 g2 g3; do
    cni ADD "$p" "/run/netns/$NS1" net1 < <(conf 1.1.0 vhostuser)
    expect_success "ADD $p"
done
[ "$(port_count)" = $((PORTS0 + 3)) ] || fail "3 ADDs gave $(port_count) ports"
conf 1.1.0 vhostuser ', "cni.dev/valid-attachments": [{"containerID": "g2", "ifname": "net1"}]' |
    CNI_COMMAND=GC CNI_PATH=$PLUGINS "$CNI" >"$WORK/out"; RC=$?
expect_success GC
[ "$(port_count)" = $((PORTS0 + 1)) ] || fail "GC left $(port_count) ports"
ctl --json port list | grep -q "$WORK/s/g2/net1" || fail "GC removed the valid g2"
[ "$(ls "$WORK/state")" = "g2+net1.json" ] || fail "GC state: $(ls "$WORK/state")"
[ "$(ipam_count)" = 1 ] || fail "GC left $(ipam_count) addresses in host-local's store"
cni DEL g2 "" net1 < <(conf 1.1.0 vhostuser)
expect_success "DEL g2"
ok "GC: g1 and g3 removed (port, state, address), g2 kept"

# ---- cycles ---------------------------------------------------------------------
IPAM0=$(ipam_count)
for ((i = 0; i < CYCLES; i++)); do
    if ((i % 2)); then kind=tap; else kind=vhostuser; fi
    cni ADD cyc "/run/netns/$NS1" eth1 < <(conf 1.1.0 $kind)
    expect_success "cycle $i ($kind) ADD"
    cni DEL cyc "/run/netns/$NS1" eth1 < <(conf 1.1.0 $kind)
    expect_success "cycle $i ($kind) DEL"
done
check_equal "ports after $CYCLES cycles" before="$PORTS0" after="$(port_count)"
check_equal "vnetd fds after $CYCLES cycles" before="$FDS0" after="$(fd_count "$VNETD_PID")"
check_equal "host-local addresses after $CYCLES cycles" before="$IPAM0" after="$(ipam_count)"

stop_pid "$VNETD_PID" || fail "vnetd exit status $?"
pass "vnetd-cni: every verb, exact errors, tap ping, vhostuser, GC, $CYCLES cycles"
