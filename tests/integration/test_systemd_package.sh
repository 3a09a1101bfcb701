#!/bin/bash
# The Debian package under a real systemd: a Debian 12 root (debootstrap,
# cached) booted once with `systemd-nspawn -b`, the built vnetd_*.deb
# installed in it with apt, then each step asserted on the unit's state,
# its MainPID and a front end's traffic:
#
#   1. install: apt-get install ./vnetd_*.deb enables the unit;
#   2. start: `systemctl start vnetd` returns once vnetd sent READY=1
#      (Type=notify): active, a MainPID, the packaged config's ports open;
#   3. reload: a port added to /etc/vnetd/vnetd.toml appears in
#      `vnetctl port list` after `systemctl reload`, same MainPID;
#   4. restart: with vnet-pktgen connected (--reconnect, the front end is
#      not restarted), `systemctl restart` gives a new MainPID and the
#      front end's frames reach vnetd again;
#   5. watchdog: a SIGSTOPped vnetd misses WatchdogSec, systemd kills and
#      restarts it (NRestarts grows, a new MainPID), traffic comes back;
#   6. package upgrade: `apt-get install --reinstall ./vnetd_*.deb` while
#      vnetd runs: the postinst's `vnetctl upgrade` hands over to a new
#      process (no stop, no restart: NRestarts unchanged), systemd follows
#      MAINPID to it, the unit stays active, traffic goes on;
#   7. stop: inactive, no vnetd left, the front end still there (it waits
#      to reconnect).
#
# The container has a network namespace of its own (--private-network)
# and no network: the package's dependencies are in the root already
# (debootstrap --include), so apt installs the .deb offline. The root is
# cached (VNET_TEST_SYSTEMD_ROOT, default /var/cache/vnetd-test/...) and
# booted with --volatile=overlay, so every run starts from the same tree.
#
# Usage: test_systemd_package.sh BUILD_DIR   (as root; the .deb files are
# in BUILD_DIR/deb, where scripts/test.sh puts them, or VNET_TEST_DEB_DIR)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
need_built "$PKTGEN"
[ "$(id -u)" = 0 ] || skip "needs root (systemd-nspawn)"
need_commands systemd-nspawn debootstrap nsenter dpkg-deb jq
DEB_DIR=${VNET_TEST_DEB_DIR:-$BUILD_DIR/deb}
DEB=$(find "$DEB_DIR" -maxdepth 1 -name 'vnetd_*.deb' 2>/dev/null | sort | tail -n 1)
# scripts/test.sh builds the package (dpkg-buildpackage) for the release
# build only: the sanitized build's pass has none to test.
[ -n "$DEB" ] || skip "no vnetd_*.deb in $DEB_DIR (dpkg-buildpackage -us -uc -b builds it)"
work_dir vnetd-systemd
T0=$(date +%s.%N)
# elapsed: seconds since the test began, for the per-step times.
elapsed() { awk -v t0="$T0" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }'; }

# ---- the root file system --------------------------------------------------------

# systemd and dbus to boot, and every package the .deb depends on, so that
# apt installs it without a network.
deb_dependencies() {
    local name
    dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/[[:space:]]//g' |
        grep -v '^$' | while read -r name; do
        real_package "$name"
    done | sort -u | tr '\n' ',' | sed 's/,$//'
}
# real_package NAME: NAME, or for a virtual package (libspdlog1.10-fmt9)
# the package that provides it: debootstrap --include takes real ones only.
real_package() {
    if [ -n "$(apt-cache show "$1" 2>/dev/null)" ]; then
        echo "$1"
    else
        apt-cache showpkg "$1" | sed -n '/^Reverse Provides:/{n;p}' | awk '{print $1}'
    fi
}
INCLUDE="systemd,systemd-sysv,dbus,$(deb_dependencies)"
ROOT=${VNET_TEST_SYSTEMD_ROOT:-/var/cache/vnetd-test/bookworm-systemd}
if [ "$(cat "$ROOT.include" 2>/dev/null)" != "$INCLUDE" ]; then
    rm -rf "$ROOT" "$ROOT.include"
    mkdir -p "$(dirname "$ROOT")"
    # The host's apt cache holds most of these packages already.
    debootstrap --variant=minbase --include="$INCLUDE" --cache-dir=/var/cache/apt/archives \
        bookworm "$ROOT" "${VNET_TEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
        >"$WORK/debootstrap.log" 2>&1 || { fail_log "$WORK/debootstrap.log"; fail "debootstrap failed"; }
    echo "$INCLUDE" >"$ROOT.include"
    ok "debootstrap: a Debian 12 root with $INCLUDE ($(elapsed) s)"
else
    ok "the cached root $ROOT has $INCLUDE"
fi

# ---- booting it --------------------------------------------------------------------

# --register=no --keep-unit: there is no systemd on the host to register
# with or to ask for a scope. SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1: the
# host's legacy cgroup hierarchies lack some controllers systemd-nspawn
# mounts for a legacy container ("Failed to read link
# /sys/fs/cgroup/hugetlb"); a unified (cgroup2) container needs none.
MACHINE="vnetd-test-$VT_ID"
bg_start --log "$WORK/console.log" env SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 \
    systemd-nspawn --boot --directory "$ROOT" --volatile=overlay --register=no --keep-unit \
    --private-network --machine "$MACHINE" --console=read-only \
    --bind-ro "$DEB_DIR:/mnt/deb" --bind-ro "$PKTGEN:/usr/local/bin/vnet-pktgen"
NSPAWN_PID=$BG_PID
fail_log "$WORK/console.log" 40
track "$NSPAWN_PID" TERM 20
# The container's init (LEADER): systemd in a pid namespace other than
# ours, whose parent is this container's systemd-nspawn (the one that made
# the namespaces, a fork of the one started here): in_ct must never run a
# command on the host.
container_init() {
    local init parent
    for init in $(pgrep -x systemd); do
        parent=$(ps -o ppid= -p "$init" | tr -d ' ')
        if [ "$(readlink "/proc/$init/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] &&
            tr '\0' ' ' <"/proc/$parent/cmdline" 2>/dev/null | grep -q -- "--machine $MACHINE "; then
            LEADER=$init
            return 0
        fi
    done
    return 1
}
wait_for 30 "the container did not start" container_init
# in_ct CMD...: CMD inside the container (its namespaces and root).
in_ct() {
    nsenter --target "$LEADER" --all env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
# "running", or "degraded" when a unit of the minimal root failed (none of
# vnetd's business); systemctl answers once systemd's socket is up.
booted() {
    STATE=$(in_ct systemctl is-system-running --wait)
    [ "$STATE" = running ] || [ "$STATE" = degraded ]
}
wait_for 60 "the container did not boot (systemd: '${STATE:-}')" booted
ok "booted: $STATE ($(elapsed) s)"

# unit PROPERTY: the vnetd unit's PROPERTY (systemctl show --value).
unit() { in_ct systemctl show --value -p "$1" vnetd; }
# transcript STEP: one line of the unit's state for the report.
transcript() {
    echo "[$(elapsed) s] $1: ActiveState=$(unit ActiveState) SubState=$(unit SubState)" \
        "MainPID=$(unit MainPID) NRestarts=$(unit NRestarts) Result=$(unit Result)"
}
# vm0_frames: frames vnetd took from the front end on vm0 (its stats).
vm0_frames() {
    in_ct vnetctl --json stats >"$WORK/stats.json" 2>/dev/null && vnetd_stats "$WORK/stats.json" vm0.rx.packets
}
# traffic_flows LABEL: vm0's count grows over one second, in 20 s at most.
traffic_flows() {
    local before after
    if wait_until 20 eval 'before=$(vm0_frames) && [ "${before:-0}" -gt 0 ]'; then
        sleep 1
        after=$(vm0_frames)
        if [ "${after:-0}" -gt "$before" ]; then
            echo "[$(elapsed) s] $1: vm0 frames from the front end $before -> $after in 1 s"
            return 0
        fi
    fi
    fail "$1: no traffic from the front end on vm0 (counts '${before:-}' '${after:-}')"
}
# pid_changed OLD: the unit is active with a MainPID other than OLD.
pid_changed() {
    local pid
    pid=$(unit MainPID)
    [ "$(unit ActiveState)" = active ] && [ "$pid" != 0 ] && [ "$pid" != "$1" ]
}

# every_path: every path of the container's file systems (/ and /run) but
# the package manager's, systemd's and the logs' own books, which an
# install and a purge rightly change (and agetty's, made whenever the
# console's getty starts, and adduser's lock directory, made when the
# postinst adds the kvm group).
every_path() {
    in_ct find / /run -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \
        -o -path /var/tmp -o -path /var/log -o -path /var/cache -o -path /var/lib/apt \
        -o -path /var/lib/dpkg -o -path /run/systemd -o -path /run/user -o -path /run/log \
        -o -path /run/lock -o -path /run/agetty.reload -o -path /run/adduser \) -prune -o -print | sort
}
every_path >"$WORK/paths-before-install.txt"

# ---- 1. install ------------------------------------------------------------------

# policy-rc.d says "not now" to the package's start on install, so that the
# start below is the test's; the unit is enabled all the same.
in_ct sh -c 'printf "#!/bin/sh\nexit 101\n" >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
in_ct apt-get install -y -q "/mnt/deb/$(basename "$DEB")" >"$WORK/apt.log" 2>&1 ||
    { fail_log "$WORK/apt.log"; fail "apt-get install ./$(basename "$DEB") failed"; }
in_ct rm /usr/sbin/policy-rc.d
[ "$(in_ct systemctl is-enabled vnetd)" = enabled ] || fail "the unit is not enabled after install"
[ "$(unit ActiveState)" = inactive ] || fail "vnetd started before the test started it"
ok "installed $(basename "$DEB"): the unit enabled, not started ($(elapsed) s)"

# ---- 2. start --------------------------------------------------------------------

# Type=notify: systemctl start returns when READY=1 came (or fails).
in_ct systemctl start vnetd || fail "systemctl start vnetd failed: $(in_ct journalctl -u vnetd -n 20 --no-pager)"
transcript "start"
[ "$(unit ActiveState)/$(unit SubState)" = active/running ] || fail "not active/running after start"
START_PID=$(unit MainPID)
[ "$START_PID" != 0 ] || fail "no MainPID after start"
in_ct vnetctl port list >"$WORK/ports.txt" || fail "vnetctl port list failed"
grep -qw vm0 "$WORK/ports.txt" || fail "the packaged config's vm0 is not open: $(cat "$WORK/ports.txt")"
ok "start: active, MainPID $START_PID, ports: $(awk 'NR > 1 {print $1}' "$WORK/ports.txt" | tr '\n' ' ')"

# ---- 3. reload -------------------------------------------------------------------

in_ct sh -c 'printf "\n[[port]]\nname = \"spare0\"\ntype = \"null\"\n" >>/etc/vnetd/vnetd.toml'
in_ct systemctl reload vnetd || fail "systemctl reload failed"
wait_for 10 "reload: spare0 did not appear in vnetctl port list" \
    eval 'in_ct vnetctl port list | grep -qw spare0'
transcript "reload"
[ "$(unit MainPID)" = "$START_PID" ] || fail "reload changed MainPID"
ok "reload: spare0 added from the config file, same MainPID"

# ---- 4. restart with a front end connected -------------------------------------------

bg_start --log "$WORK/pktgen.log" nsenter --target "$LEADER" --all \
    vnet-pktgen --socket-path /run/vnetd/vm/vm0.sock --tx --reconnect --rate 2000 --duration 0 \
    --stats-interval 0
BG_PID_PKTGEN=$BG_PID
fail_log "$WORK/pktgen.log" 20
front_end_started() { FRONT_END=$(in_ct pidof vnet-pktgen); }
wait_for 10 "vnet-pktgen did not start in the container" front_end_started
traffic_flows "before restart"
in_ct systemctl restart vnetd || fail "systemctl restart failed"
transcript "restart"
pid_changed "$START_PID" || fail "restart: MainPID did not change (or the unit is not active)"
traffic_flows "after restart"
[ "$(in_ct pidof vnet-pktgen)" = "$FRONT_END" ] || fail "restart: the front end was restarted"
ok "restart: new MainPID $(unit MainPID), the front end (pid $FRONT_END in the container) reconnected"

# ---- 5. the watchdog -------------------------------------------------------------

[ "$(unit WatchdogUSec)" != 0 ] || fail "the unit has no WatchdogSec"
STOPPED_PID=$(unit MainPID)
RESTARTS=$(unit NRestarts)
in_ct kill -STOP "$STOPPED_PID"
echo "[$(elapsed) s] watchdog: SIGSTOP to $STOPPED_PID (WatchdogUSec=$(unit WatchdogUSec))"
restarted_by_watchdog() { pid_changed "$STOPPED_PID" && [ "$(unit NRestarts)" -gt "$RESTARTS" ]; }
wait_for 40 "watchdog: vnetd was not restarted" restarted_by_watchdog
transcript "watchdog"
in_ct journalctl -u vnetd --no-pager -o cat | grep -q "Watchdog timeout" ||
    fail "watchdog: no 'Watchdog timeout' in the journal"
traffic_flows "after the watchdog restart"
[ "$(in_ct pidof vnet-pktgen)" = "$FRONT_END" ] || fail "watchdog: the front end was restarted"
ok "watchdog: restarted, NRestarts $(unit NRestarts), MainPID $(unit MainPID)"

# ---- 6. package upgrade: in place -------------------------------------------------------

OLD_PID=$(unit MainPID)
RESTARTS=$(unit NRestarts)
in_ct apt-get install --reinstall -y -q "/mnt/deb/$(basename "$DEB")" >"$WORK/upgrade.txt" 2>&1 ||
    { fail_log "$WORK/upgrade.txt"; fail "apt-get install --reinstall failed"; }
grep -q '^vnetd: upgraded in place' "$WORK/upgrade.txt" ||
    { fail_log "$WORK/upgrade.txt"; fail "upgrade: the postinst did not hand over in place"; }
echo "[$(elapsed) s] upgrade: $(grep -E 'upgraded|pid' "$WORK/upgrade.txt" | tr '\n' ' ')"
NEW_PID=$(sed -nE 's/.*pid ([0-9]+).*/\1/p' "$WORK/upgrade.txt" | head -n 1)
[ -n "$NEW_PID" ] || fail "upgrade: no new pid in vnetctl upgrade's answer"
[ "$(unit NRestarts)" = "$RESTARTS" ] || fail "upgrade: the unit was restarted (NRestarts $RESTARTS -> $(unit NRestarts))"
# The new process's pid in the container; systemd follows MAINPID=.
wait_for 10 "upgrade: MainPID did not follow the new process" eval '[ "$(unit MainPID)" = "$NEW_PID" ]'
transcript "upgrade"
[ "$NEW_PID" != "$OLD_PID" ] || fail "upgrade: the same pid"
sleep 2
[ "$(unit ActiveState)" = active ] || fail "upgrade: the unit is not active 2 s after the handover"
[ "$(unit MainPID)" = "$NEW_PID" ] || fail "upgrade: MainPID moved again"
in_ct test ! -e "/proc/$OLD_PID" || fail "upgrade: the old vnetd ($OLD_PID) is still there"
traffic_flows "after the upgrade"
[ "$(in_ct pidof vnet-pktgen)" = "$FRONT_END" ] || fail "upgrade: the front end was restarted"
ok "package upgrade: in place, MainPID $OLD_PID -> $NEW_PID, NRestarts $RESTARTS, still active"

# ---- 7. stop ---------------------------------------------------------------------

in_ct systemctl stop vnetd || fail "systemctl stop failed"
transcript "stop"
[ "$(unit ActiveState)" = inactive ] ||
    fail "stop: the unit is $(unit ActiveState) ($(unit Result)); its journal:
$(in_ct journalctl -u vnetd --no-pager -n 25 -o short-monotonic)"
[ "$(unit Result)" = success ] || fail "stop: Result=$(unit Result)"
[ -z "$(in_ct pidof vnetd)" ] || fail "stop: a vnetd is left: $(in_ct pidof vnetd)"
[ "$(in_ct pidof vnet-pktgen)" = "$FRONT_END" ] || fail "stop: the front end went too"
ok "stop: inactive, Result=success, no vnetd left ($(elapsed) s in all)"

# ---- 8. purge --------------------------------------------------------------------

stop_pid "$BG_PID_PKTGEN" TERM >/dev/null
in_ct apt-get purge -y -q vnetd >"$WORK/purge.log" 2>&1 ||
    { fail_log "$WORK/purge.log"; fail "apt-get purge vnetd failed"; }
every_path >"$WORK/paths-after-purge.txt"
comm -13 "$WORK/paths-before-install.txt" "$WORK/paths-after-purge.txt" >"$WORK/left.txt"
[ -s "$WORK/left.txt" ] && fail "purge left: $(head -n 20 "$WORK/left.txt" | tr '\n' ' ')"
ok "purge: nothing left behind ($(wc -l <"$WORK/paths-after-purge.txt") paths as before the install; $(elapsed) s in all)"

pass "the package under systemd: install, start, reload, restart, watchdog, package upgrade in place, stop, purge"
