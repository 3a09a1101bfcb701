#!/bin/bash
# `cmake --install` puts every file where docs/USAGE.md "Installing" says,
# and the installed files work together:
#
#   - under --prefix P: P/sbin/vnetd, P/bin/vnetctl, P/bin/vnet-pktgen,
#     P/lib/cni/vnetd-cni (where CNI runtimes look for plugins),
#     P/LIBDIR/vnetd/bpf/{xdp_drop,xdp_pass,xdp_redirect}.bpf.o,
#     P/lib/systemd/system/vnetd.service, P/share/qemu/vhost-user/50-vnetd.json,
#     P/share/doc/vnetd/examples/vnetd.toml and prometheus/vnetd.rules.yml, and nothing else (the install
#     manifest lists exactly these);
#   - the QEMU back-end description is the vhost-user.json @VhostUserBackend
#     object (description, type "net", binary = P/sbin/vnetd, no other
#     member) and that binary prints {"type":"net"} for --print-capabilities;
#   - the unit names P/sbin/vnetd, and `systemd-analyze verify` accepts it
#     without a single message;
#   - with DESTDIR the files land under DESTDIR but name the prefix (the
#     path they will have), as packagers need;
#   - the installed vnetd finds its own XDP programs by name
#     (--tap-xdp xdp_pass loads P/LIBDIR/vnetd/bpf/xdp_pass.bpf.o), and so
#     does the build tree's (BUILD/bpf/xdp_pass.bpf.o).
#
# Usage: test_install.sh BUILD_DIR   (as root: the XDP check makes a tap)
set -u

BUILD_DIR=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
[ "$(id -u)" = 0 ] || skip "needs root (a tap for the XDP lookup)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (scripts/install-deps.sh installs systemd)"
work_dir vnetd-install
LIBDIR=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
[ -n "$LIBDIR" ] || fail "no CMAKE_INSTALL_LIBDIR in $BUILD_DIR/CMakeCache.txt"

expected_files() { # PREFIX
    printf '%s\n' "$1/sbin/vnetd" "$1/bin/vnetctl" "$1/bin/vnet-pktgen" "$1/lib/cni/vnetd-cni" \
        "$1/$LIBDIR/vnetd/bpf/xdp_drop.bpf.o" "$1/$LIBDIR/vnetd/bpf/xdp_pass.bpf.o" \
        "$1/$LIBDIR/vnetd/bpf/xdp_redirect.bpf.o" "$1/$LIBDIR/vnetd/bpf/tc_redirect.bpf.o" \
        "$1/$LIBDIR/vnetd/bpf/udp_port_steer.bpf.o" \
        "$1/lib/systemd/system/vnetd.service" \
        "$1/share/qemu/vhost-user/50-vnetd.json" "$1/share/doc/vnetd/examples/vnetd.toml" \
        "$1/share/man/man8/vnetd.8" "$1/share/man/man8/vnetctl.8" "$1/share/man/man5/vnetd.toml.5" \
        "$1/share/bash-completion/completions/vnetd" "$1/share/bash-completion/completions/vnetctl" \
        "$1/share/doc/vnetd/examples/prometheus/vnetd.rules.yml" | sort
}

# --- cmake --install --prefix P
P="$WORK/prefix"
cmake --install "$BUILD_DIR" --prefix "$P" >"$WORK/install.log" 2>&1 ||
    fail "cmake --install --prefix $P: $(tail -5 "$WORK/install.log")"
diff <(expected_files "$P") <(sort "$BUILD_DIR/install_manifest.txt") >"$WORK/manifest.diff" ||
    fail "installed files differ from the documented ones (< documented, > installed): $(cat "$WORK/manifest.diff")"
diff <(expected_files "$P") <(find "$P" -type f | sort) >"$WORK/tree.diff" ||
    fail "the prefix holds other files: $(cat "$WORK/tree.diff")"
for bin in "$P/sbin/vnetd" "$P/bin/vnetctl" "$P/bin/vnet-pktgen"; do
    [ -x "$bin" ] || fail "$bin is not executable"
done
ok "every file is where it is documented, and nothing else"

# --- QEMU's back-end description
python3 - "$P/share/qemu/vhost-user/50-vnetd.json" "$P/sbin/vnetd" <<'PY' || fail "50-vnetd.json is not the back-end description"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"type": "net", "binary": sys.argv[2]}
assert set(d) == {"description", "type", "binary"}, sorted(d)
assert isinstance(d["description"], str) and d["description"], d
assert {k: d[k] for k in want} == want, d
PY
caps=$("$P/sbin/vnetd" --print-capabilities) || fail "installed vnetd --print-capabilities failed"
[ "$caps" = '{"type":"net"}' ] || fail "installed vnetd --print-capabilities: $caps"
ok "50-vnetd.json names $P/sbin/vnetd, which prints its capabilities"

# --- the systemd unit
UNIT="$P/lib/systemd/system/vnetd.service"
grep -qx "ExecStart=$P/sbin/vnetd --config /etc/vnetd/vnetd.toml" "$UNIT" ||
    fail "the unit does not start $P/sbin/vnetd: $(grep ExecStart "$UNIT")"
for line in "Type=notify" "WatchdogSec=10s" 'ExecReload=/bin/kill -HUP $MAINPID' \
    "CapabilityBoundingSet=CAP_NET_ADMIN CAP_BPF CAP_CHOWN CAP_DAC_OVERRIDE"; do
    grep -qxF "$line" "$UNIT" || fail "the unit has no line '$line'"
done
systemd-analyze verify "$UNIT" >"$WORK/verify.out" 2>&1
rc=$?
[ "$rc" = 0 ] || fail "systemd-analyze verify: exit status $rc: $(cat "$WORK/verify.out")"
[ ! -s "$WORK/verify.out" ] || fail "systemd-analyze verify said: $(cat "$WORK/verify.out")"
ok "systemd-analyze verify accepts the unit without a message"

# --- DESTDIR: files under it, paths without it
D="$WORK/destdir"
DESTDIR="$D" cmake --install "$BUILD_DIR" --prefix /usr >"$WORK/install-destdir.log" 2>&1 ||
    fail "DESTDIR=$D cmake --install --prefix /usr: $(tail -5 "$WORK/install-destdir.log")"
diff <(expected_files "$D/usr") <(find "$D" -type f | sort) >"$WORK/destdir.diff" ||
    fail "DESTDIR install differs: $(cat "$WORK/destdir.diff")"
grep -q '"binary": "/usr/sbin/vnetd"' "$D/usr/share/qemu/vhost-user/50-vnetd.json" ||
    fail "with DESTDIR the description names $(grep binary "$D/usr/share/qemu/vhost-user/50-vnetd.json")"
grep -qx "ExecStart=/usr/sbin/vnetd --config /etc/vnetd/vnetd.toml" "$D/usr/lib/systemd/system/vnetd.service" ||
    fail "with DESTDIR the unit starts $(grep ExecStart "$D/usr/lib/systemd/system/vnetd.service")"
ok "DESTDIR: files under $D, naming /usr"

# --- vnetd finds its own XDP programs by name
xdp_lookup() { # LABEL VNETD EXPECTED-OBJECT
    local ns tap
    ns=$(ns_name vinst "$1")
    tap=$(link_name vin "$1")
    netns_new "$ns"
    # Run from the work directory, where no xdp_pass file is.
    (cd "$WORK" && exec ip netns exec "$ns" "$2" --tap "$tap" --null --tap-xdp xdp_pass \
        --control-socket "" >"$WORK/xdp-$1.log" 2>&1) &
    local pid=$!
    track "$pid"
    wait_for 10 "($1) vnetd did not load xdp_pass" log_has "$WORK/xdp-$1.log" "xdp program"
    log_has "$WORK/xdp-$1.log" "from $3 on tap" ||
        fail "($1) vnetd loaded $(grep -o 'from [^ ]*' "$WORK/xdp-$1.log"), expected $3"
    stop_pid "$pid" || fail "($1) vnetd exited with status $?"
    ok "$2 --tap-xdp xdp_pass loads $3"
}
xdp_lookup i "$P/sbin/vnetd" "$P/$LIBDIR/vnetd/bpf/xdp_pass.bpf.o"
xdp_lookup b "$BUILD_DIR/apps/vnetd" "$BUILD_DIR/bpf/xdp_pass.bpf.o"
pass
