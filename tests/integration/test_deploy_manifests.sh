#!/bin/bash
# deploy/kubernetes's manifests, checked offline against this build (no
# cluster, no Multus, no container image: those are only on paper, see
# docs/KUBERNETES.md "What is tested here"):
#   - every manifest is YAML that parses, each object has apiVersion, kind
#     and metadata.name; every NetworkAttachmentDefinition's spec.config is
#     JSON for vnetd-cni;
#   - the DaemonSet's vnetd container is not privileged and adds exactly
#     CAP_NET_ADMIN; vnetd runs here as it would there: the ConfigMap's
#     vnetd.toml, the container's args (metrics on 127.0.0.1), PID 1 of a
#     pid namespace, root with CAP_NET_ADMIN alone (setpriv), and its
#     effective capabilities in /proc are exactly that;
#   - the readiness and liveness probes' commands (taken from the YAML)
#     exit 0 while vnetd runs; the readiness one exits non-zero once it
#     stopped;
#   - deploy/container/install-cni.sh installs the build's vnetd-cni as a
#     bundle: the wrapper answers VERSION, and the loader loads every
#     library from the bundle, none from the host;
#   - nad-vhostuser.yaml's config through that wrapper, as Multus calls it
#     (runtimeConfig.CNIDeviceInfoFile): the socket is
#     <socketDir>/<12 chars of the container id>/net1, the device-info file
#     says mode "client" with that path; the script of
#     pod-testpmd-vhostuser.yaml, given a network-status annotation as
#     Multus writes it, finds the socket and its testpmd connects (with no
#     capabilities, as in the pod); DEL removes the port, socket and file;
#   - nad-tap.yaml's config: ADD puts net1 into a netns with host-local's
#     first address of the range, up; DEL removes the port and the link;
#   - SIGTERM to vnetd as PID 1 ends it within the DaemonSet's
#     terminationGracePeriodSeconds, exit status 0, control socket removed.
# Usage: test_deploy_manifests.sh BUILD_DIR   (as root)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MANIFESTS="$TOP/deploy/kubernetes"
PLUGINS=/usr/lib/cni

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
python3 -c 'import yaml' 2>/dev/null || fail "python3 has no yaml module (scripts/install-deps.sh installs python3-yaml)"
for bin in "$VNETD" "$VNETCTL" "$CNI" "$PLUGINS/host-local"; do
    [ -x "$bin" ] || fail "$bin not there (scripts/install-deps.sh installs containernetworking-plugins)"
done
command -v dpdk-testpmd >/dev/null || fail "dpdk-testpmd not found (scripts/install-deps.sh installs dpdk-dev)"
command -v setpriv >/dev/null || fail "setpriv not found (util-linux)"

work_dir vnet-deploy
fail_log "$WORK/vnetd.log" 40

# ---- the manifests: parse, and take out what the rest checks ---------------------
python3 - "$MANIFESTS" "$WORK" <<'PY' || fail "the manifests"
import glob, json, os, sys, yaml

manifests, work = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(manifests, "*.yaml")))
assert files, "no manifests in " + manifests
objs = []
for f in files:
    docs = [d for d in yaml.safe_load_all(open(f)) if d is not None]
    assert docs, f + ": no object"
    for d in docs:
        for key in ("apiVersion", "kind"):
            assert key in d, f"{f}: an object without {key}"
        assert d.get("metadata", {}).get("name"), f"{f}: a {d['kind']} without metadata.name"
        objs.append((os.path.basename(f), d))
    print(f"ok: {os.path.basename(f)} parses: " + ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs))

def one(kind, name=None, file=None):
    found = [d for f, d in objs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
             and (file is None or f == file)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} in {file or 'the manifests'}"
    return found[0]

def write(name, text):
    with open(os.path.join(work, name), "w") as out:
        out.write(text)

# The NADs: JSON for vnetd-cni.
for f, d in objs:
    if d["kind"] != "NetworkAttachmentDefinition":
        continue
    conf = json.loads(d["spec"]["config"])
    assert conf["type"] == "vnetd-cni", f"{f}: type {conf['type']}"
    write(f"nad-{d['metadata']['name']}.json", json.dumps(conf))
    print(f"ok: {f}: NetworkAttachmentDefinition {d['metadata']['name']}: spec.config is JSON, iftype {conf['host']['iftype']}")

# The DaemonSet: vnetd's container, its probes, args and volumes.
ds = one("DaemonSet", "vnetd")
spec = ds["spec"]["template"]["spec"]
assert spec["hostNetwork"] is True, "hostNetwork"
c = [c for c in spec["containers"] if c["name"] == "vnetd"][0]
sc = c["securityContext"]
assert sc.get("privileged") is False, "vnetd's container is privileged"
assert sc["capabilities"]["drop"] == ["ALL"] and sc["capabilities"]["add"] == ["NET_ADMIN"], sc["capabilities"]
print("ok: the vnetd container is not privileged: drops ALL, adds NET_ADMIN only")
volumes = {v["name"]: v for v in spec["volumes"]}
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
assert volumes[mounts["/run/vnetd"]]["hostPath"]["path"] == "/run/vnetd", "/run/vnetd is not the host's"
assert volumes[mounts["/dev/net/tun"]]["hostPath"]["type"] == "CharDevice", "/dev/net/tun"
init = spec["initContainers"][0]
assert volumes[init["volumeMounts"][0]["name"]]["hostPath"]["path"] == "/opt/cni/bin"
assert init["command"][0] == "/usr/libexec/vnetd/install-cni.sh" and init["command"][1] == init["volumeMounts"][0]["mountPath"]
write("readiness", "\n".join(c["readinessProbe"]["exec"]["command"]) + "\n")
write("liveness", "\n".join(c["livenessProbe"]["exec"]["command"]) + "\n")
write("args", "\n".join(c["args"]) + "\n")
write("grace", str(spec["terminationGracePeriodSeconds"]) + "\n")
cm = one("ConfigMap", "vnetd-config")
write("vnetd.toml", cm["data"]["vnetd.toml"])
config_mount = [m for m in c["volumeMounts"] if m["name"] == "config"][0]["mountPath"]
assert os.path.join(config_mount, "vnetd.toml") in c["args"], "args do not name the ConfigMap's file"

# The testpmd pod's script.
pod = one("Pod", "vnetd-testpmd")
tc = pod["spec"]["containers"][0]
assert tc["command"][:2] == ["/bin/sh", "-c"], tc["command"]
write("testpmd.sh", tc["command"][2])
assert tc["securityContext"]["capabilities"]["drop"] == ["ALL"]
PY
ok "every manifest parses; the values the checks below use are taken from them"

# ---- vnetd as the DaemonSet runs it ------------------------------------------------
# Its control socket, state file and metrics address are this run's; the
# rest is the ConfigMap's file and the container's args (the node IP is
# 127.0.0.1 here).
CTL="$WORK/run/vnetd.ctl"
mkdir -p "$WORK/run"
grep -q '^state_file = "/run/vnetd/state.json"$' "$WORK/vnetd.toml" ||
    fail "the ConfigMap does not set state_file = /run/vnetd/state.json"
sed -e "s|/run/vnetd/vnetd.ctl|$CTL|" -e "s|/run/vnetd/state.json|$WORK/run/state.json|" \
    "$WORK/vnetd.toml" >"$WORK/vnetd.local.toml"
grep -q "/run/vnetd/" "$WORK/vnetd.local.toml" && fail "a host path is left in vnetd.local.toml"
# shellcheck disable=SC2016 # $(NODE_IP) is the manifest's text, not ours to expand
mapfile -t ARGS < <(sed -e "s|^/etc/vnetd/vnetd.toml$|$WORK/vnetd.local.toml|" \
    -e 's|^$(NODE_IP):9464$|127.0.0.1:0|' "$WORK/args")
echo "vnetd ${ARGS[*]}"
# PID 1 of a new pid namespace (as in its container), root with
# CAP_NET_ADMIN alone in every set.
bg_start --log "$WORK/vnetd.log" unshare --pid --fork --mount-proc --kill-child=SIGTERM \
    setpriv --bounding-set -all,+net_admin --inh-caps -all -- "$VNETD" "${ARGS[@]}"
UNSHARE_PID=$BG_PID
wait_control
VNETD_PID=$(awk '{print $1}' "/proc/$UNSHARE_PID/task/$UNSHARE_PID/children")
[ -n "$VNETD_PID" ] || fail "no child of unshare"
NSPID=$(awk '/^NSpid:/ {print $NF}' "/proc/$VNETD_PID/status")
CAPEFF=$(awk '/^CapEff:/ {print $2}' "/proc/$VNETD_PID/status")
check_equal "vnetd is PID 1 of its pid namespace" "NSpid=$NSPID" "expected=1"
check_equal "vnetd's effective capabilities: CAP_NET_ADMIN (bit 12) only" \
    "CapEff=$CAPEFF" "expected=0000000000001000"
log_has "$WORK/vnetd.log" 'metrics at http://127\.0\.0\.1:[0-9]+/metrics' || fail "no metrics endpoint in the log"
ok "vnetd runs on the ConfigMap's vnetd.toml: $(grep -oE 'metrics at [^ ]+' "$WORK/vnetd.log")"

# probe FILE: the probe's command, with this run's control socket.
probe() {
    local cmd
    mapfile -t cmd < <(sed "s|^/run/vnetd/vnetd.ctl$|$CTL|" "$WORK/$1")
    [ "${cmd[0]}" = vnetctl ] || fail "the $1 probe does not run vnetctl: ${cmd[*]}"
    "$VNETCTL" "${cmd[@]:1}"
}
probe readiness >"$WORK/readiness.out" || fail "readiness probe failed with vnetd up: $(cat "$WORK/readiness.out")"
probe liveness >"$WORK/liveness.out" || fail "liveness probe failed with vnetd up"
grep -qw s0 "$WORK/liveness.out" || fail "liveness probe's switch list has no s0: $(cat "$WORK/liveness.out")"
ok "the readiness probe ($(tr '\n' ' ' <"$WORK/readiness")) and the liveness probe ($(tr '\n' ' ' <"$WORK/liveness")) exit 0"

# ---- the CNI plugin, installed as the init container installs it --------------------
BIN="$WORK/opt-cni-bin"
mkdir -p "$BIN"
"$TOP/deploy/container/install-cni.sh" "$BIN" "$CNI" >"$WORK/install-cni.out" 2>&1 ||
    fail "install-cni.sh: $(cat "$WORK/install-cni.out")"
cat "$WORK/install-cni.out"
if [ ! -x "$BIN/vnetd-cni" ] || [ ! -x "$BIN/vnetd-cni.d/vnetd-cni" ]; then
    fail "install-cni.sh left $(ls -la "$BIN")"
fi
# Again, over the first: the bundle is replaced, nothing is left beside it.
"$TOP/deploy/container/install-cni.sh" "$BIN" "$CNI" >/dev/null 2>&1 || fail "install-cni.sh a second time"
check_equal "entries in the CNI dir after two installs" "count=$(find "$BIN" -mindepth 1 -maxdepth 1 | wc -l)" "expected=2"
VERSION=$(CNI_COMMAND=VERSION "$BIN/vnetd-cni" </dev/null) || fail "the wrapper's VERSION failed"
[ "$VERSION" = "$(CNI_COMMAND=VERSION "$CNI" </dev/null)" ] || fail "the wrapper's VERSION: $VERSION"
# LD_DEBUG reaches the wrapper's shell (and its dirname) too: what the
# plugin loads is what comes from the bundle's loader on.
CNI_COMMAND=VERSION LD_DEBUG=libs "$BIN/vnetd-cni" </dev/null 2>"$WORK/ld.debug" >/dev/null
awk -v loader="calling init: $BIN/vnetd-cni.d/ld-linux" 'index($0, loader) {on = 1} on && /calling init: /' \
    "$WORK/ld.debug" >"$WORK/ld.plugin"
INITS=$(wc -l <"$WORK/ld.plugin")
FOREIGN=$(grep -vc "calling init: $BIN/vnetd-cni.d/" "$WORK/ld.plugin")
[ "$INITS" -gt 3 ] || fail "LD_DEBUG shows $INITS libraries: $(head "$WORK/ld.debug")"
check_equal "libraries loaded from outside the bundle" "count=$FOREIGN" "expected=0"
ok "the installed wrapper answers VERSION ($VERSION); all $INITS libraries come from the bundle"

# cni CONF_JSON COMMAND CONTAINERID NETNS IFNAME: the installed plugin, as
# a runtime calls it; stdout in $WORK/out, status in RC.
cni() {
    CNI_COMMAND=$2 CNI_CONTAINERID=$3 CNI_NETNS=$4 CNI_IFNAME=$5 CNI_PATH="$BIN:$PLUGINS" \
        "$BIN/vnetd-cni" <"$1" >"$WORK/out"
    RC=$?
}
out() { cat "$WORK/out"; }
json_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
port_count() { "$VNETCTL" --socket "$CTL" --json port list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
PORTS0=$(port_count)

# localize NAD OUT [IPAM_DATADIR]: the NAD's config with this run's control
# socket, state and socket directories (the paths are the point of
# socketDir: kept short), host-local's store here, and what Multus adds:
# runtimeConfig.CNIDeviceInfoFile when the config has the capability.
localize() {
    python3 - "$WORK/nad-$1.json" "$WORK" >"$2" <<'PY'
import json, sys
conf, work = json.load(open(sys.argv[1])), sys.argv[2]
conf["controlSocket"] = work + "/run/vnetd.ctl"
conf["stateDir"] = work + "/state"
conf["socketDir"] = work + "/s"
if "ipam" in conf:
    conf["ipam"]["dataDir"] = work + "/ipam"
if conf.get("capabilities", {}).get("CNIDeviceInfoFile"):
    conf["runtimeConfig"] = {"CNIDeviceInfoFile": work + "/devinfo/net1.json"}
print(json.dumps(conf))
PY
}

# ---- nad-vhostuser.yaml, and the testpmd pod's script ----------------------------------
CID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
localize vnetd-vhostuser "$WORK/vhost.json"
cni "$WORK/vhost.json" ADD "$CID" /var/run/netns/none net1
[ "$RC" = 0 ] || fail "vhostuser ADD: $(out)"
SOCK=$(json_of "$WORK/out" 'd["interfaces"][0]["socketPath"]')
check_equal "the pod's socket" "result=$SOCK" "expected=$WORK/s/${CID:0:12}/net1"
[ -S "$SOCK" ] || fail "no socket at $SOCK"
DEVINFO="$WORK/devinfo/net1.json"
check_equal "device-info" "file=$(json_of "$DEVINFO" 'd["type"], d["vhost-user"]["mode"], d["vhost-user"]["path"]')" \
    "expected=('vhost-user', 'client', '$SOCK')"
# The ConfigMap's state_file: the pod's port is there, for a restarted vnetd.
python3 - "$WORK/run/state.json" "$SOCK" <<'PY' || fail "the state file after ADD: $(cat "$WORK/run/state.json")"
import json, sys
ports = json.load(open(sys.argv[1]))["ports"]
assert [p["settings"].get("socket_path") for p in ports] == [sys.argv[2]], ports
PY
ok "vhostuser ADD: socket $SOCK, device-info mode client, in the state file"

# The network-status annotation Multus writes (indented JSON), with the
# device-info copied in; the pod's script reads it through NETWORK_STATUS.
python3 - "$DEVINFO" >"$WORK/network-status" <<'PY'
import json, sys
status = [{"name": "default/vnetd-vhostuser", "interface": "net1",
           "device-info": json.load(open(sys.argv[1]))}]
print(json.dumps(status, indent=4))
PY
# The pod drops every capability; its DPDK runtime directory is this run's.
sed "s|--file-prefix=testpmd|--file-prefix=vnet-$VT_ID-deploy|" "$WORK/testpmd.sh" >"$WORK/testpmd.local.sh"
on_exit rm -rf "/var/run/dpdk/vnet-$VT_ID-deploy"
bg_start --log "$WORK/testpmd.log" env NETWORK_STATUS="$WORK/network-status" \
    setpriv --bounding-set -all --inh-caps -all -- /bin/sh "$WORK/testpmd.local.sh"
TESTPMD_PID=$BG_PID
connections() { "$VNETCTL" --socket "$CTL" --json port list |
    python3 -c 'import json,sys; print(sum(p.get("connections", 0) for p in json.load(sys.stdin)))'; }
connected() { [ "$(connections)" = 1 ]; }
wait_until 30 connected || fail "testpmd did not connect to vnetd's socket: $(tail -5 "$WORK/testpmd.log")"
grep -q "vhost-user socket: $SOCK" "$WORK/testpmd.log" || fail "the script found another socket: $(head -3 "$WORK/testpmd.log")"
ok "the testpmd pod's script found $SOCK in the annotation; testpmd (no capabilities) is connected"
stop_pid "$TESTPMD_PID" TERM 10 || true

cni "$WORK/vhost.json" DEL "$CID" /var/run/netns/none net1
[ "$RC" = 0 ] || fail "vhostuser DEL: $(out)"
if [ -e "$SOCK" ] || [ -e "$DEVINFO" ]; then fail "DEL left $(ls "$SOCK" "$DEVINFO" 2>&1)"; fi
check_equal "vnetd's ports after vhostuser DEL" "now=$(port_count)" "before=$PORTS0"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["ports"] == []' "$WORK/run/state.json" ||
    fail "the state file after DEL: $(cat "$WORK/run/state.json")"
ok "vhostuser DEL: port, socket and device-info file gone, and out of the state file"

# ---- nad-tap.yaml -----------------------------------------------------------------------
NS=$(ns_name deploy)
netns_new "$NS"
localize vnetd-tap "$WORK/tap.json"
FIRST=$(json_of "$WORK/tap.json" 'd["ipam"]["ranges"][0][0]["rangeStart"]')
cni "$WORK/tap.json" ADD "$CID" "/var/run/netns/$NS" net1
[ "$RC" = 0 ] || fail "tap ADD: $(out)"
ADDR=$(json_of "$WORK/out" 'd["ips"][0]["address"]')
check_equal "the tap pod's address" "result=$ADDR" "expected=$FIRST/24"
ip -n "$NS" -o addr show dev net1 | grep -q "inet $FIRST/24" || fail "net1 in $NS: $(ip -n "$NS" addr 2>&1)"
ip -n "$NS" -o link show dev net1 | grep -q "state UP\|,UP" || fail "net1 is not up: $(ip -n "$NS" link show net1)"
check_equal "vnetd's ports after tap ADD" "now=$(port_count)" "expected=$((PORTS0 + 1))"
ok "tap ADD: net1 in $NS, $ADDR, up; the tap was made by vnetd with CAP_NET_ADMIN alone"
cni "$WORK/tap.json" DEL "$CID" "/var/run/netns/$NS" net1
[ "$RC" = 0 ] || fail "tap DEL: $(out)"
wait_for 5 "net1 is still in $NS after DEL" sh -c "! ip -n '$NS' link show net1 >/dev/null 2>&1"
check_equal "vnetd's ports after tap DEL" "now=$(port_count)" "before=$PORTS0"
ok "tap DEL: port and link gone"

# ---- SIGTERM to PID 1, within the grace period --------------------------------------------
GRACE=$(cat "$WORK/grace")
T0=$(_vt_now_us)
kill -TERM "$VNETD_PID"
wait_until "$GRACE" exited "$UNSHARE_PID" || fail "vnetd (PID 1) still runs $GRACE s after SIGTERM"
MS=$((($(_vt_now_us) - T0) / 1000))
stop_pid "$UNSHARE_PID" TERM 1
RC=$?
check_equal "vnetd's exit status after SIGTERM" "status=$RC" "expected=0"
[ ! -e "$CTL" ] || fail "the control socket is still there"
ok "SIGTERM to vnetd as PID 1: exit 0 after $MS ms (grace period ${GRACE} s), control socket removed"
if probe readiness >/dev/null 2>&1; then fail "the readiness probe succeeds with vnetd gone"; fi
ok "the readiness probe fails once vnetd is gone"
pass
