#!/bin/sh
# install-cni.sh DEST [PLUGIN]: put vnetd-cni into DEST (the host's CNI
# binary directory, e.g. /opt/cni/bin mounted at /host/opt/cni/bin) so that
# it runs on the host whatever the host's distribution and libraries are.
#
# The plugin is linked against the image's Debian 12 libraries (libnl-route,
# libfmt, spdlog, glibc ...), which a host may not have. So it is installed
# as a bundle: DEST/vnetd-cni.d/ holds the binary, every library `ldd`
# names and the image's own dynamic loader, and DEST/vnetd-cni is a small
# /bin/sh wrapper that starts the binary through that loader with
# --library-path (not LD_LIBRARY_PATH: the IPAM plugins vnetd-cni runs
# must get the host's libraries, not ours).
#
# Both are written next to their final names and renamed into place, so a
# runtime never executes a half-copied plugin; running it again replaces the
# bundle (a pod's ADD that is running meanwhile keeps its open files).
#
# The init container of deploy/kubernetes/vnetd-daemonset.yaml runs it;
# tests/integration/test_deploy_manifests.sh runs it on this machine's build.
set -eu

dest=${1:?usage: install-cni.sh DEST [PLUGIN]}
plugin=${2:-/usr/lib/cni/vnetd-cni}
[ -x "$plugin" ] || { echo "install-cni: $plugin is not an executable" >&2; exit 1; }
[ -d "$dest" ] || { echo "install-cni: $dest is not a directory (mount the host's CNI bin dir)" >&2; exit 1; }

stage="$dest/.vnetd-cni.d.$$"
rm -rf "$stage"
mkdir -p "$stage"
cp "$plugin" "$stage/vnetd-cni"
# ldd lists "name => /path (addr)" for libraries and "/path/ld-linux... (addr)"
# for the loader; linux-vdso has no file.
loader=""
for lib in $(ldd "$plugin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    cp -L "$lib" "$stage/"
    case "$lib" in */ld-linux*) loader=$(basename "$lib") ;; esac
done
[ -n "$loader" ] || { echo "install-cni: ldd $plugin names no dynamic loader" >&2; exit 1; }

cat >"$dest/.vnetd-cni.$$" <<WRAPPER
#!/bin/sh
# vnetd-cni, installed by vnetd's install-cni.sh: the plugin with its own
# libraries and loader (see vnetd-cni.d/), whatever the host has.
d=\$(dirname "\$0")/vnetd-cni.d
exec "\$d/$loader" --library-path "\$d" --argv0 "\$0" "\$d/vnetd-cni" "\$@"
WRAPPER
chmod 0755 "$dest/.vnetd-cni.$$" "$stage" "$stage"/*

# The bundle first, then the wrapper that uses it. An older bundle is
# moved aside and removed, so the directory is never missing for long.
if [ -e "$dest/vnetd-cni.d" ]; then
    mv "$dest/vnetd-cni.d" "$dest/.vnetd-cni.d.old.$$"
fi
mv "$stage" "$dest/vnetd-cni.d"
mv "$dest/.vnetd-cni.$$" "$dest/vnetd-cni"
rm -rf "$dest/.vnetd-cni.d.old.$$"
echo "install-cni: $dest/vnetd-cni (bundle $dest/vnetd-cni.d: $(find "$dest/vnetd-cni.d" -type f | wc -l) files, loader $loader)"
