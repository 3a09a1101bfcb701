#!/usr/bin/env bash
# Installs everything vnetd's build, tests, demo and benchmarks need on a
# fresh Debian 12 machine (run as root), and reserves hugepages for DPDK.
# Safe to run again: apt skips what is there.
#   scripts/install-deps.sh           everything
#   scripts/install-deps.sh --build   only what building needs (scripts/test.sh
#                                     builds while the rest installs)
#   scripts/install-deps.sh --demo    what building needs and what scripts/demo.sh
#                                     runs besides (no peers, no hugepages)
set -euo pipefail

build_packages=(
    cmake ninja-build g++ clang libclang-rt-14-dev clang-format pkg-config
    libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
    liburing-dev libbpf-dev libxdp-dev libgtest-dev libgmock-dev libbenchmark-dev
    # the metrics endpoint: prometheus-cpp's text format served by libmicrohttpd (IPv6 too)
    prometheus-cpp-dev libmicrohttpd-dev
    # sd_notify (libsystemd); --user/--group keep CAP_NET_ADMIN through libcap-ng;
    # vnetd-cni's rtnetlink
    libsystemd-dev libcap-ng-dev libnl-route-3-dev
    # the release build is the Debian package's (debian/, dpkg-buildpackage)
    dpkg-dev debhelper
)
# scripts/demo.sh: its report and host-side sender are Python, its hosts are
# namespaces joined by veth and the kernel's VXLAN (ip).
demo_packages=(python3 iproute2)
test_packages=(
    # peers and test tools: DPDK testpmd lives in dpdk-dev, not in dpdk
    dpdk dpdk-dev iproute2 ethtool iperf3 tcpdump busybox-static xdp-tools python3
    # test_deploy_manifests: parses deploy/kubernetes/*.yaml
    python3-yaml
    # the tests read vnetd's stats JSON (lib/common.sh vnetd_stats)
    jq
    # the metrics test: a real Prometheus server scrapes vnetd, curl reads the endpoint,
    # promtool (in prometheus) tests deploy/prometheus/vnetd.rules.yml
    prometheus curl
    # vnet-bench latency: UDP ping-pong between namespaces
    sockperf
    # vnet-bench --charts; OVS-DPDK, the switch benchmarks' peer
    gnuplot-nox openvswitch-switch-dpdk
    # a real guest under TCG, also as a libvirt domain
    qemu-system-x86 linux-image-amd64 libvirt-daemon-system libvirt-clients
    # `systemd-analyze verify` of the unit
    systemd
    # the CNI plugins vnetd-cni chains with (host-local, tuning)
    containernetworking-plugins
    # a real runtime on vnetd-cni (test_cni_podman.sh): runc, because crun 1.8 refuses hybrid cgroups
    podman runc
    # the package's checks (test_package), and a Debian 12 root booted under
    # a real systemd with the package in it (test_systemd_package)
    lintian debootstrap systemd-container
    # EVPN between namespaces as hosts (test_evpn_frr*): zebra + bgpd per
    # namespace; nft counts the underlay's VXLAN datagrams
    frr nftables
)

packages=("${build_packages[@]}")
case ${1:-} in
--build) ;;
--demo) packages+=("${demo_packages[@]}") ;;
*) packages+=("${test_packages[@]}") ;;
esac

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # frr's postinst starts and enables its service: a zebra in the host's own
    # namespace that the tests do not want (they start zebra + bgpd per
    # namespace, each in its own pathspace). A policy-rc.d that refuses frr
    # alone keeps it from starting; one the admin already has is left alone.
    policy=/usr/sbin/policy-rc.d
    if [ ! -e $policy ]; then
        printf '#!/bin/sh\n[ "$1" = frr ] && exit 101\nexit 0\n' >$policy
        chmod 755 $policy
        trap 'rm -f $policy' EXIT
    fi
    # dpkg's fsync per file is much of an install's time on a VM's disk; what
    # it guards against (power lost mid-install) is no risk on a build machine.
    apt-get install -y -qq -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
    # ... nor at the next boot
    if [[ " ${missing[*]} " == *" frr "* ]]; then
        systemctl disable frr.service >/dev/null 2>&1 || true
        update-rc.d frr disable >/dev/null 2>&1 || true
    fi
fi
case ${1:-} in --build | --demo) exit 0 ;; esac

# DPDK's virtio-user front end wants hugepages (reference/peer-baselines.md);
# 512 x 2 MiB is plenty for two testpmd instances.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$hp" ] && [ "$(cat "$hp")" -lt 512 ]; then
    echo 512 >"$hp" || true
fi
mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; } || true
echo "install-deps: ok (hugepages: $(cat "$hp" 2>/dev/null || echo n/a))"
