#!/bin/bash
# A real container runtime on vnetd-cni: Debian's podman (4.3, network_backend
# "cni") runs a container on a vnetd network (host.iftype tap, switch s0,
# host-local IPAM), and the container pings a real Linux guest (QEMU, TCG,
# busybox initramfs in serve mode: qemu/guest_init.sh vnet_serve) whose
# virtio-net device is a vhost-user port on the same switch.
# Podman is kept apart from the host's defaults: CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF and CONTAINERS_REGISTRIES_CONF name files made
# here (graphroot, runroot, tmp_dir, the CNI config and plugin directories,
# the events log all in the work directory), and the container's root file
# system is a directory with static busybox (--rootfs: no image, so nothing
# goes through containers/image and its cache in /var/lib/containers).
# Asserts:
#   - podman sees the network (driver vnetd-cni) and the CNI backend
#   - podman run exits 0; the container's ping: N sent, N received; the
#     guest counted exactly N echo requests and N replies
#   - while the container runs: one more vnetd port, the container's eth0 is
#     vnetd's tap (tun type tap), vnetd-cni's attachment record exists, and
#     the container's address (its own `ip addr`, podman inspect) is the
#     one host-local allocated to this container id in its dataDir
#   - once the container exited (podman's cleanup calls CNI DEL): vnetd's
#     ports as before, the address, the record and the netns gone;
#     podman rm exits 0 and leaves no container
#   - vnetd exits 0 on SIGTERM
# The podman command is printed as it is run; "container:" lines are the
# container's output.
#
# Usage: test_cni_podman.sh BUILD_DIR   (as root)
# Environment: VNET_QEMU_KERNEL (see guest_kernel), VNET_QEMU_TIMEOUT=240 (s,
# QEMU's whole run), VNET_TEST_PINGS=3, VNET_KEEP_WORK=1.
# shellcheck disable=SC2317 # functions run through wait_for and on_exit
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PLUGINS=/usr/lib/cni
QEMU=$(command -v qemu-system-x86_64 || true)
QEMU_TIMEOUT=${VNET_QEMU_TIMEOUT:-240}
PINGS=${VNET_TEST_PINGS:-3}

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
[ "$(id -u)" = 0 ] || fail "needs root (like every integration test)"
for bin in podman runc; do
    command -v "$bin" >/dev/null || fail "$bin not found (scripts/install-deps.sh installs podman and runc)"
done
[ -n "$QEMU" ] || fail "qemu-system-x86_64 not found (Debian package qemu-system-x86)"
command -v iperf3 >/dev/null || fail "iperf3 not found (the guest's initramfs takes it)"
[ -x /bin/busybox ] || fail "/bin/busybox not found (Debian package busybox-static)"
for bin in "$VNETD" "$VNETCTL" "$CNI" "$PLUGINS/host-local"; do
    [ -x "$bin" ] || fail "$bin not there (build it; containernetworking-plugins for host-local)"
done
guest_kernel

work_dir vnet-podman
CTL="$WORK/vnetd.ctl"
NETNAME=vnet-podman-$VT_ID
CTR=vnet-podman-$VT_ID
NET=10.87.$((VT_ID % 250))
GUEST_IP=$NET.2
T0=$(date +%s.%N)
fail_log "$WORK/vnetd.log" 30
fail_log "$WORK/qemu.log" 20
fail_log "$WORK/console.txt" 40
fail_log "$WORK/podman-run.out" 30
fail_log "$WORK/podman-run.err" 30
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# ---- podman's world, all in WORK ----------------------------------------------
# runc, not crun: crun 1.8 refuses a hybrid cgroup hierarchy (v1 controllers
# plus a cgroup2 on /sys/fs/cgroup/unified, as on the machines these tests
# run on here) with "cgroups in hybrid mode not supported"; runc runs on v1,
# hybrid and v2.
# default_ulimits: rootful podman gives a container RLIMIT_NOFILE and
# RLIMIT_NPROC of 1048576, which only a runtime with CAP_SYS_RESOURCE may set
# above its own hard limits (root lacks it on the machines here), and podman
# 4.3 lowers its own RLIMIT_NPROC to 32768 as it starts: so the container
# gets this shell's hard nofile limit and at most 32768 processes.
NPROC=$(ulimit -Hu)
[ "$NPROC" = unlimited ] || [ "$NPROC" -gt 32768 ] && NPROC=32768
mkdir -p "$WORK/cni-bin" "$WORK/net.d" "$WORK/rootfs/bin" "$WORK/ctl"
ln -s "$(realpath "$CNI")" "$WORK/cni-bin/vnetd-cni"
cat >"$WORK/containers.conf" <<TOML
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$WORK/podman-tmp/events.log"
tmp_dir = "$WORK/podman-tmp"

[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=$NPROC:$NPROC"]

[network]
network_backend = "cni"
cni_plugin_dirs = ["$WORK/cni-bin", "$PLUGINS"]
network_config_dir = "$WORK/net.d"
TOML
cat >"$WORK/storage.conf" <<TOML
[storage]
driver = "overlay"
graphroot = "$WORK/storage"
runroot = "$WORK/storage-run"
TOML
: >"$WORK/registries.conf"
export CONTAINERS_CONF="$WORK/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/storage.conf" \
    CONTAINERS_REGISTRIES_CONF="$WORK/registries.conf"
# cniVersion 1.0.0: podman 4.3's libcni (1.1.x) speaks up to 1.0.0.
cat >"$WORK/net.d/$NETNAME.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "$NETNAME", "plugins": [
  {"type": "vnetd-cni", "controlSocket": "$CTL",
   "stateDir": "$WORK/state", "socketDir": "$WORK/sockets",
   "host": {"iftype": "tap", "bridge": {"bridgeName": "s0"}},
   "ipam": {"type": "host-local", "subnet": "$NET.0/24", "rangeStart": "$NET.10",
            "rangeEnd": "$NET.50", "dataDir": "$WORK/ipam"}}]}
JSON
# The container's root: static busybox and a link for each applet.
cp /bin/busybox "$WORK/rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -s busybox "$WORK/rootfs/bin/$applet"
done

# At exit, whatever happened: the container (podman stops it and calls CNI
# DEL; vnetd may be gone by then, so also the netns podman made for it),
# and libcni's result cache entry for this network (libcni keeps it in
# /var/lib/cni/results, which podman 4.3 cannot move; DEL removes it).
CTR_NETNS=""
podman_cleanup() {
    podman rm -f -t 0 "$CTR" >/dev/null 2>&1
    [ -n "$CTR_NETNS" ] && [ -e "/run/netns/$CTR_NETNS" ] && ip netns del "$CTR_NETNS"
    rm -f /var/lib/cni/results/"$NETNAME"-*
    local m
    for m in $(findmnt -rn -o TARGET | grep "^$WORK/" | sort -r); do umount -l "$m"; done
}
on_exit podman_cleanup

echo "== $(podman --version), $(runc --version | head -n 1); network $NETNAME ($NET.0/24), guest $GUEST_IP, kernel $KVER"
[ "$(podman info --format '{{.Host.NetworkBackend}}')" = cni ] ||
    fail "podman's network backend is not cni: $(podman info --format '{{.Host.NetworkBackend}}' 2>&1)"
DRIVER=$(podman network inspect --format '{{.Driver}}' "$NETNAME" 2>&1) ||
    fail "podman does not see $NETNAME: $DRIVER"
[ "$DRIVER" = vnetd-cni ] || fail "network $NETNAME: driver $DRIVER"
ok "podman: backend cni, network $NETNAME with driver $DRIVER"

# ---- vnetd: switch s0 with the guest's port -------------------------------------
cat >"$WORK/vnetd.toml" <<TOML
[daemon]
control_socket = "$CTL"

[[switch]]
name = "s0"

[[port]]
name = "vm0"
type = "vhost-user"
socket_path = "$WORK/vm0.sock"
switch = "s0"
TOML
start_vnetd "$WORK/vnetd.log" --config "$WORK/vnetd.toml"
wait_for 10 "vnetd did not open its sockets" test -S "$CTL" -a -S "$WORK/vm0.sock"
port_count() { ctl --json port list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
PORTS0=$(port_count)

# ---- the guest: answers pings on s0 ------------------------------------------------
guest_initramfs
T_QEMU=$(date +%s.%N)
guest_command --mb 384 --console "$WORK/console.log" --socket "$WORK/vm0.sock" --mac 52:54:00:12:36:01 \
    --offloads "" --append "vnet_guest=$GUEST_IP vnet_serve=$PINGS vnet_wait=$((QEMU_TIMEOUT - 60))"
bg_start --log "$WORK/qemu.log" timeout -k 5 "$QEMU_TIMEOUT" "${GUEST_CMD[@]}"
QEMU_PID=$BG_PID
console_text() { tr -d '\r' <"$WORK/console.log" >"$WORK/console.txt" 2>/dev/null; }
guest_serving() { console_text; grep -q '^VNET-GUEST serving' "$WORK/console.txt"; }
wait_for 150 "the guest did not come up (VNET-GUEST serving)" guest_serving
ok "guest $GUEST_IP on s0 answers pings after $(elapsed "$T_QEMU") s"

# ---- the container -----------------------------------------------------------------
# It prints its eth0 address, pings the guest, says so through the bind
# mount /ctl and waits there for "go" (so that the test sees it attached),
# then exits with ping's status.
SCRIPT="ip -o -4 addr show dev eth0; ping -c $PINGS -W 5 $GUEST_IP; rc=\$?; echo ping-rc \$rc; touch /ctl/pinged; i=0; while [ ! -e /ctl/go ] && [ \$i -lt 600 ]; do usleep 100000; i=\$((i + 1)); done; exit \$rc"
RUN=(podman run --name "$CTR" --network "$NETNAME" -v "$WORK/ctl:/ctl" --rootfs "$WORK/rootfs" sh -c "$SCRIPT")
echo "== CONTAINERS_CONF=$CONTAINERS_CONF CONTAINERS_STORAGE_CONF=$CONTAINERS_STORAGE_CONF ${RUN[*]}"
T_RUN=$(date +%s.%N)
bg_start --out "$WORK/podman-run.out" --err "$WORK/podman-run.err" "${RUN[@]}"
RUN_PID=$BG_PID
container_pinged() { [ -e "$WORK/ctl/pinged" ] || { exited "$RUN_PID" && fail "podman run ended before the ping"; }; }
wait_for 60 "the container did not finish its ping" container_pinged
T_PINGED=$(elapsed "$T_RUN")

# While it runs: vnetd's port, the tap in the container's netns, the records.
PORTS_RUN=$(port_count)
[ "$PORTS_RUN" = $((PORTS0 + 1)) ] || fail "vnetd has $PORTS_RUN ports while the container runs ($PORTS0 before)"
CID=$(podman inspect --format '{{.Id}}' "$CTR") || fail "podman inspect $CTR"
SANDBOX=$(podman inspect --format '{{.NetworkSettings.SandboxKey}}' "$CTR")
CTR_NETNS=${SANDBOX#/run/netns/}
if [ -z "$CTR_NETNS" ] || [ "/run/netns/$CTR_NETNS" != "$SANDBOX" ]; then fail "container netns: '$SANDBOX'"; fi
ip -n "$CTR_NETNS" -d link show eth0 | grep -q 'tun type tap' ||
    fail "eth0 in $SANDBOX is not a tap: $(ip -n "$CTR_NETNS" -d link show eth0 2>&1)"
PORT=$(ctl --json port list | python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(sys.stdin) if p["name"] != "vm0"))')
[[ "$PORT" =~ ^vn[0-9a-f]{12}$ ]] || fail "vnetd's container port: '$PORT'"
[ -f "$WORK/state/$CID+eth0.json" ] || fail "no attachment record $CID+eth0.json: $(ls "$WORK/state")"
IP=$(grep -oE 'inet [0-9.]+/24' "$WORK/podman-run.out" | cut -d ' ' -f 2)
IP=${IP%/24}
[ -n "$IP" ] || fail "the container printed no eth0 address"
INSPECT_IP=$(podman inspect --format "{{(index .NetworkSettings.Networks \"$NETNAME\").IPAddress}}" "$CTR")
[ "$INSPECT_IP" = "$IP" ] || fail "podman inspect says $INSPECT_IP, the container's eth0 has $IP"
[ -f "$WORK/ipam/$NETNAME/$IP" ] || fail "host-local has no $IP: $(ls "$WORK/ipam/$NETNAME")"
OWNER=$(head -n 1 "$WORK/ipam/$NETNAME/$IP" | tr -d '\r')
[ "$OWNER" = "$CID" ] || fail "host-local gave $IP to '$OWNER', not to $CID"
ok "while it runs: vnetd port $PORT (ports $PORTS0 -> $PORTS_RUN), eth0 a tap in $SANDBOX, $IP from host-local ($WORK/ipam/$NETNAME/$IP = container id)"

touch "$WORK/ctl/go"
wait_for 30 "podman run did not end" exited "$RUN_PID"
stop_pid "$RUN_PID"
RUN_RC=$?
T_RAN=$(elapsed "$T_RUN")
sed 's/^/container: /' "$WORK/podman-run.out"
[ "$RUN_RC" = 0 ] || fail "podman run exited with $RUN_RC: $(cat "$WORK/podman-run.err")"
grep -qE "^$PINGS packets transmitted, $PINGS packets received, 0% packet loss" "$WORK/podman-run.out" ||
    fail "the container's ping did not get $PINGS of $PINGS replies"
ok "podman run exited 0; the container's ping of $GUEST_IP: $(grep 'packets transmitted' "$WORK/podman-run.out")"

# After the exit: podman's cleanup has called CNI DEL.
T_EXIT=$(date +%s.%N)
ports_back() { [ "$(port_count)" = "$PORTS0" ]; }
wait_for 20 "vnetd still has $(port_count) ports after the container exited ($PORTS0 before)" ports_back
T_DEL=$(elapsed "$T_EXIT")
[ ! -e "$WORK/ipam/$NETNAME/$IP" ] || fail "host-local still holds $IP after the exit"
[ ! -e "$WORK/state/$CID+eth0.json" ] || fail "the attachment record is still there after the exit"
[ ! -e "$SANDBOX" ] || fail "the netns $SANDBOX is still there after the exit"
ok "after the exit (CNI DEL within $T_DEL s): ports back to $PORTS0, $IP released, record and netns gone"
podman rm "$CTR" >"$WORK/rm.out" 2>&1 || fail "podman rm $CTR: $(cat "$WORK/rm.out")"
[ -z "$(podman ps -a -q)" ] || fail "containers left after podman rm: $(podman ps -a)"
[ "$(port_count)" = "$PORTS0" ] || fail "vnetd has $(port_count) ports after podman rm"
ok "podman rm: exit 0, no container left, vnetd ports $PORTS0"

# ---- the guest's side, vnetd's exit --------------------------------------------------
wait_for 60 "QEMU did not end after the pings" exited "$QEMU_PID"
stop_pid "$QEMU_PID"
QEMU_RC=$?
console_text
[ "$QEMU_RC" = 0 ] || fail "QEMU exited with $QEMU_RC"
ICMP=$(sed -n 's/^VNET-GUEST icmp //p' "$WORK/console.txt")
[ "$ICMP" = "InEchos $PINGS OutEchoReps $PINGS" ] || fail "the guest counted: ${ICMP:-nothing}"
ok "the guest: $ICMP"
stop_pid "$VNETD_PID" || fail "vnetd exit status $?"
ok "vnetd exited 0"
echo "time: total $(elapsed "$T0") s; podman run to the ping's end $T_PINGED s, whole run $T_RAN s"
pass "podman (CNI backend) ran a container on vnetd-cni (tap, host-local $IP) that pinged a QEMU guest on s0: $PINGS/$PINGS"
