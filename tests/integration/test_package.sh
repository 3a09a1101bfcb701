#!/bin/bash
# The Debian packages as built (dpkg-buildpackage, debian/): lintian finds
# no error; the files are where Debian policy puts them (the daemon in
# /usr/sbin, the unit in /lib/systemd/system, the configuration a
# conffile in /etc, man pages, bash completion, QEMU's description naming
# the installed vnetd); the man pages render without a warning; the bash
# completion, written from vnetctl's command table, completes every
# subcommand `vnetctl --help` lists. Installing, the unit under systemd
# and purging are test_systemd_package's (a booted Debian root).
#
# Usage: test_package.sh BUILD_DIR   (the .deb files in BUILD_DIR/deb, where
# scripts/test.sh puts them, or VNET_TEST_DEB_DIR)
set -u

HERE=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
build_programs "${1:-}"
need_built "$VNETCTL"
need_commands dpkg-deb lintian man
DEB_DIR=${VNET_TEST_DEB_DIR:-$BUILD_DIR/deb}
DEB=$(find "$DEB_DIR" -maxdepth 1 -name 'vnetd_*.deb' 2>/dev/null | sort | tail -n 1)
# scripts/test.sh builds the package for the release build only.
[ -n "$DEB" ] || skip "no vnetd_*.deb in $DEB_DIR (dpkg-buildpackage -us -uc -b builds it)"
CNI_DEB=$(find "$DEB_DIR" -maxdepth 1 -name 'vnetd-cni_*.deb' | sort | tail -n 1)
[ -n "$CNI_DEB" ] || fail "no vnetd-cni_*.deb beside $DEB"
work_dir vnetd-package

# ---- lintian ---------------------------------------------------------------------

# Root may run lintian (the CI machine's user), but it says so on every run.
lintian --allow-root --fail-on error --display-info "$DEB" "$CNI_DEB" >"$WORK/lintian.txt" 2>&1
status=$?
sed 's/^/  lintian: /' "$WORK/lintian.txt"
[ "$status" = 0 ] || fail "lintian exited $status (errors: $(grep -c '^E:' "$WORK/lintian.txt"))"
ok "lintian: no errors ($(grep -c '^W:' "$WORK/lintian.txt") warnings, $(grep -c '^I:' "$WORK/lintian.txt") infos)"

# ---- where the files are ---------------------------------------------------------

dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\.||' >"$WORK/files.txt"
for f in /usr/sbin/vnetd /usr/bin/vnetctl /lib/systemd/system/vnetd.service \
    /etc/vnetd/vnetd.toml /usr/share/qemu/vhost-user/50-vnetd.json \
    /usr/share/man/man8/vnetd.8.gz /usr/share/man/man8/vnetctl.8.gz \
    /usr/share/man/man5/vnetd.toml.5.gz /usr/share/bash-completion/completions/vnetctl \
    /usr/share/bash-completion/completions/vnetd /usr/share/doc/vnetd/copyright; do
    grep -qx "$f" "$WORK/files.txt" || fail "$f is not in $(basename "$DEB")"
done
for prog in xdp_drop xdp_pass xdp_redirect tc_redirect udp_port_steer; do
    grep -qE "^/usr/lib/x86_64-linux-gnu/vnetd/bpf/$prog\.bpf\.o$" "$WORK/files.txt" ||
        fail "$prog.bpf.o is not in $(basename "$DEB")"
done
dpkg-deb -c "$CNI_DEB" | grep -q ' \./usr/lib/cni/vnetd-cni$' || fail "vnetd-cni is not in /usr/lib/cni"
dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles >"$WORK/conffiles"
[ "$(cat "$WORK/conffiles")" = /etc/vnetd/vnetd.toml ] ||
    fail "conffiles: '$(cat "$WORK/conffiles")', expected /etc/vnetd/vnetd.toml"
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/qemu/vhost-user/50-vnetd.json |
    jq -e '.binary == "/usr/sbin/vnetd" and .type == "net"' >/dev/null ||
    fail "50-vnetd.json does not name /usr/sbin/vnetd"
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./lib/systemd/system/vnetd.service |
    grep -qx 'ExecStart=/usr/sbin/vnetd --config /etc/vnetd/vnetd.toml' ||
    fail "the unit does not start /usr/sbin/vnetd"
ok "files: $(wc -l <"$WORK/files.txt") paths, conffile /etc/vnetd/vnetd.toml, the unit and QEMU's description name /usr/sbin/vnetd"

# ---- man pages -------------------------------------------------------------------

mkdir "$WORK/pages"
dpkg-deb -x "$DEB" "$WORK/pages"
for page in man8/vnetd.8.gz man8/vnetctl.8.gz man5/vnetd.toml.5.gz; do
    path="$WORK/pages/usr/share/man/$page"
    LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$path" >"$WORK/page.txt" 2>"$WORK/page.err"
    [ -s "$WORK/page.err" ] && fail "man --warnings $page: $(head -n 5 "$WORK/page.err")"
    [ "$(wc -l <"$WORK/page.txt")" -gt 20 ] || fail "$page renders to $(wc -l <"$WORK/page.txt") lines"
done
# Every subcommand vnetctl's --help lists is in its page, and every option
# of the table is in vnetd.toml(5).
LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$WORK/pages/usr/share/man/man8/vnetctl.8.gz" >"$WORK/vnetctl.txt" 2>/dev/null
"$VNETCTL" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF {print $1}' >"$WORK/commands.txt"
[ -s "$WORK/commands.txt" ] || fail "no subcommands in vnetctl --help"
while read -r cmd; do
    grep -qE "^ +vnetctl $cmd( |$)" "$WORK/vnetctl.txt" || fail "vnetctl.8 has no 'vnetctl $cmd'"
done <"$WORK/commands.txt"
LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$WORK/pages/usr/share/man/man5/vnetd.toml.5.gz" >"$WORK/toml.txt" 2>/dev/null
for key in socket_path tx_batch mode log_level control_socket mac_table_size; do
    grep -qE "^ +$key = " "$WORK/toml.txt" || fail "vnetd.toml.5 has no key $key"
done
ok "man pages: vnetd.8, vnetctl.8 ($(wc -l <"$WORK/commands.txt") commands), vnetd.toml.5 render without warnings"

# ---- bash completion ---------------------------------------------------------------

# complete WORD...: what _vnetctl offers for the last WORD of `vnetctl WORD...`.
complete_vnetctl() {
    bash -c '
        source "$0"
        COMP_WORDS=(vnetctl "$@")
        COMP_CWORD=$#
        _vnetctl
        printf "%s\n" "${COMPREPLY[@]}"
    ' "$WORK/pages/usr/share/bash-completion/completions/vnetctl" "$@"
}
top=$(complete_vnetctl "" | sort | tr '\n' ' ')
while read -r cmd; do
    [[ " $top " == *" $cmd "* ]] || fail "completion of 'vnetctl ' lacks $cmd (offers: $top)"
done <"$WORK/commands.txt"
[ "$(complete_vnetctl po)" = port ] || fail "'vnetctl po' completes to '$(complete_vnetctl po)'"
port_words=$(complete_vnetctl port "" | tr '\n' ' ')
for sub in add del list; do
    [[ " $port_words " == *" $sub "* ]] || fail "'vnetctl port ' lacks $sub (offers: $port_words)"
done
[[ " $(complete_vnetctl --socket /tmp x port add --p | tr '\n' ' ') " == *" --peer "* ]] ||
    fail "'vnetctl --socket /tmp x port add --p' does not offer --peer"
ok "bash completion: 'vnetctl ' offers every subcommand; 'port ' offers $port_words"

pass "packages: lintian clean of errors, files in place, man pages and completion current"
