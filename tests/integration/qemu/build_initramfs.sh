#!/bin/bash
# Builds the busybox initramfs that test_qemu_guest.sh boots under QEMU:
#   /bin/busybox (static) and its applet links, made at boot by --install
#   /modules/*.ko and /modules/order: the virtio-pci + virtio-net drivers of
#     the given Debian kernel with their dependencies, in load order; modules
#     built into that kernel (modules.builtin) are left out
#   /usr/bin/iperf3 and ethtool (queue pairs: ethtool -l/-L) with the shared
#     libraries ldd names, at the same paths
#   /init: guest_init.sh from this folder
#
# Usage: build_initramfs.sh KERNEL_VERSION OUT.cpio.gz
#   KERNEL_VERSION names /lib/modules/KERNEL_VERSION (e.g. 6.1.0-57-amd64).
set -euo pipefail

KVER=${1:?usage: $0 KERNEL_VERSION OUT.cpio.gz}
OUT=${2:?usage: $0 KERNEL_VERSION OUT.cpio.gz}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODDIR=/lib/modules/$KVER
BUSYBOX=${VNET_BUSYBOX:-/bin/busybox}
IPERF3=$(command -v iperf3)
ETHTOOL=$(command -v ethtool || echo /usr/sbin/ethtool)

die() {
    echo "build_initramfs: $*" >&2
    exit 1
}

[ -f "$MODDIR/modules.dep" ] || die "$MODDIR/modules.dep not found"
[ -x "$BUSYBOX" ] || die "$BUSYBOX not found (Debian package busybox-static)"
# ldd says "not a dynamic executable" of a static binary.
[[ "$(ldd "$BUSYBOX" 2>&1 || true)" == *"not a dynamic"* ]] ||
    die "$BUSYBOX is not statically linked (install busybox-static)"
[ -n "$IPERF3" ] || die "iperf3 not found"
[ -x "$ETHTOOL" ] || die "ethtool not found (Debian package ethtool)"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/vnet-initramfs.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,modules}

# The kernel opens /dev/console for init before /init can mount devtmpfs.
mknod -m 600 "$ROOT/dev/console" c 5 1
cp "$BUSYBOX" "$ROOT/bin/busybox"
install -m 0755 "$HERE/guest_init.sh" "$ROOT/init"

# ---- kernel modules -------------------------------------------------------
# modules.dep lines: "kernel/path/name.ko[.xz|.zst|.gz]: dep1 dep2 ..."
# Module names are compared with '-' folded to '_', as the kernel does.
declare -A DEP_PATH=() DEP_LIST=() BUILTIN=() LOADED=()
while IFS= read -r line; do
    path=${line%%:*}
    base=${path##*/}
    name=${base%%.ko*}
    name=${name//-/_}
    DEP_PATH[$name]=$path
    DEP_LIST[$name]=${line#*:}
done <"$MODDIR/modules.dep"
if [ -f "$MODDIR/modules.builtin" ]; then
    while IFS= read -r path; do
        base=${path##*/}
        name=${base%%.ko*}
        BUILTIN[${name//-/_}]=1
    done <"$MODDIR/modules.builtin"
fi

ORDER=()
# add_module NAME: its dependencies first (depth first), then itself.
add_module() {
    local name=${1//-/_} dep depname
    [ -n "${LOADED[$name]:-}" ] && return 0
    LOADED[$name]=1
    if [ -z "${DEP_PATH[$name]:-}" ]; then
        if [ -n "${BUILTIN[$name]:-}" ]; then
            echo "build_initramfs: $name is built into $KVER" >&2
            return 0
        fi
        die "module $name is neither in modules.dep nor in modules.builtin of $KVER"
    fi
    for dep in ${DEP_LIST[$name]}; do
        depname=${dep##*/}
        add_module "${depname%%.ko*}"
    done
    local src=$MODDIR/${DEP_PATH[$name]} dst=$ROOT/modules/$name.ko
    # Decompress here so the guest's insmod needs no decompressor support.
    case "$src" in
    *.ko) cp "$src" "$dst" ;;
    *.ko.xz) xz -dc "$src" >"$dst" ;;
    *.ko.zst) zstd -qdc "$src" >"$dst" ;;
    *.ko.gz) gzip -dc "$src" >"$dst" ;;
    *) die "unknown module format: $src" ;;
    esac
    ORDER+=("$name")
}
# The order reference/peer-baselines.md found to work; dependencies that a
# later kernel adds are pulled in by add_module.
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci \
    failover net_failover virtio_net; do
    add_module "$m"
done
printf '%s\n' "${ORDER[@]}" >"$ROOT/modules/order"

# ---- iperf3, ethtool and their libraries -----------------------------------
copy_with_path() {
    mkdir -p "$ROOT$(dirname "$1")"
    cp -L "$1" "$ROOT$1"
}
for tool in "$IPERF3" "$ETHTOOL"; do
    copy_with_path "$tool"
    while read -r lib; do
        copy_with_path "$lib"
    done < <(ldd "$tool" | grep -oE '/[^ ]+' | sort -u)
done
# iperf3 (glibc) resolves numeric addresses only; an empty hosts file keeps
# getaddrinfo quiet.
: >"$ROOT/etc/hosts"
echo 'root:x:0:0:root:/:/bin/sh' >"$ROOT/etc/passwd"

(cd "$ROOT" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$OUT"
echo "build_initramfs: $OUT ($(du -k "$OUT" | cut -f1) KiB; modules: ${ORDER[*]})" >&2
