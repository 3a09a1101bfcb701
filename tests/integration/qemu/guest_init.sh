#!/bin/busybox sh
# /init of the test guest (see build_initramfs.sh). Reads its parameters from
# the kernel command line:
#   vnet_host=IP    the host side of the tap (ping and iperf3 server)
#   vnet_guest=IP   eth0's address (/24)
#   vnet_secs=N     seconds per iperf3 direction
#   vnet_trace_drops=1  (optional) report the kernel's skb drops and reasons
#   vnet_mq=N       (optional) multiqueue run instead of the two iperf3
#                   directions: ethtool -l, -L combined 1, -L combined N, and
#                   one iperf3 client per CPU (ports 5201+cpu), each pinned so
#                   that XPS sends it through that CPU's queue pair
#   vnet_relink=1   (optional) instead of iperf3: after the ping, wait for
#                   eth0's carrier to drop and come back (the back end
#                   restarting: QEMU sets the link down while its vhost-user
#                   socket is closed) and ping again
# and reports on the console, one fact per line, each line starting with
# "VNET-GUEST " so that the host can grep them out of the kernel's output.
# Always ends with "VNET-GUEST done" and a power-off, whatever failed.
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Only errors from the kernel from here on: they would split our lines.
echo 1 >/proc/sys/kernel/printk

say() { echo "VNET-GUEST $*"; }
# report TAG FILE: every line of FILE as "VNET-GUEST TAG: line"
report() { sed "s/^/VNET-GUEST $1: /" "$2"; }
finish() {
    say "done"
    sync
    poweroff -f
    sleep 5
    echo o >/proc/sysrq-trigger
}

HOST_IP='' GUEST_IP='' SECS=3
# shellcheck disable=SC2013 # words, not lines
for w in $(cat /proc/cmdline); do
    case "$w" in
    vnet_host=*) HOST_IP=${w#*=} ;;
    vnet_guest=*) GUEST_IP=${w#*=} ;;
    vnet_secs=*) SECS=${w#*=} ;;
    vnet_trace_drops=1) TRACE_DROPS=1 ;;
    vnet_mq=*) MQ=${w#*=} ;;
    vnet_relink=1) RELINK=1 ;;
    esac
done
# vnet_trace_drops=1: record every kfree_skb (a drop, with its reason) and
# report them at the end, grouped.
if [ -n "${TRACE_DROPS:-}" ]; then
    mount -t tracefs tracefs /sys/kernel/tracing
    echo 4096 >/sys/kernel/tracing/buffer_size_kb
    echo 1 >/sys/kernel/tracing/events/skb/kfree_skb/enable
fi
say "boot ok, kernel $(uname -r), host $HOST_IP guest $GUEST_IP secs $SECS"

while read -r m; do
    insmod "/modules/$m.ko" 2>/tmp/insmod.err || {
        report "insmod-$m" /tmp/insmod.err
        say "insmod $m failed"
    }
done </modules/order

i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
if [ ! -e /sys/class/net/eth0 ]; then
    say "no eth0"
    finish
fi

# Features the driver and the device agreed on: one '0'/'1' per bit, bit 0
# first (drivers/virtio/virtio.c features_show).
for d in /sys/bus/virtio/devices/*; do
    [ "$(cat "$d/device")" = 0x0001 ] && say "features $(cat "$d/features")"
done

ip link set lo up
ip addr add "$GUEST_IP/24" dev eth0
ip link set eth0 up
i=0
while [ "$(cat /sys/class/net/eth0/operstate)" != up ] && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
say "eth0 operstate $(cat /sys/class/net/eth0/operstate) mtu $(cat /sys/class/net/eth0/mtu)"

ping -c 3 -i 0.5 -W 5 "$HOST_IP" >/tmp/ping.out 2>&1
rc=$?
report ping /tmp/ping.out
say "ping-rc $rc"

# wait_carrier VALUE TENTHS: until eth0's carrier reads VALUE; 1 if it did not
# within TENTHS tenths of a second.
wait_carrier() {
    i=0
    while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != "$1" ]; do
        [ $i -ge "$2" ] && return 1
        sleep 0.1
        i=$((i + 1))
    done
}

# The back end restarts under a running guest: the link goes down and up
# and the same interface, untouched, reaches the host again.
if [ -n "${RELINK:-}" ]; then
    say "waiting for the link to drop"
    if wait_carrier 0 1800; then
        say "link down"
        if wait_carrier 1 1800; then
            say "link up"
            ping -c 3 -i 0.5 -w 30 "$HOST_IP" >/tmp/ping2.out 2>&1
            rc=$?
            report ping2 /tmp/ping2.out
            say "ping2-rc $rc"
        else
            say "link stayed down"
        fi
    else
        say "link never dropped"
    fi
    for f in /sys/class/net/eth0/statistics/*; do
        say "eth0 ${f##*/} $(cat "$f")"
    done
    finish
fi

# Multiqueue: the queue pairs as the driver sees them, shrunk to one and
# grown back at run time (QEMU turns each change into SET_VRING_ENABLE),
# then one stream per CPU.
if [ -n "${MQ:-}" ]; then
    ethtool -l eth0 >/tmp/channels.out 2>&1
    report channels /tmp/channels.out
    ethtool -L eth0 combined 1 >/tmp/l1.out 2>&1
    say "ethtool-L1-rc $?"
    report ethtool-L1 /tmp/l1.out
    ethtool -l eth0 | sed -n '/Current/,$p' | grep Combined >/tmp/l1c.out 2>&1
    report channels-after-L1 /tmp/l1c.out
    sleep 1
    ethtool -L eth0 combined "$MQ" >/tmp/ln.out 2>&1
    say "ethtool-LN-rc $?"
    report ethtool-LN /tmp/ln.out
    ethtool -l eth0 | sed -n '/Current/,$p' | grep Combined >/tmp/lnc.out 2>&1
    report channels-after-LN /tmp/lnc.out
    cpu=0
    while [ $cpu -lt "$MQ" ]; do
        taskset -c $cpu timeout $((SECS + 40)) iperf3 -c "$HOST_IP" -p $((5201 + cpu)) -t "$SECS" \
            -f m --connect-timeout 10000 >/tmp/iperf-cpu$cpu.out 2>&1 &
        cpu=$((cpu + 1))
    done
    wait
    cpu=0
    while [ $cpu -lt "$MQ" ]; do
        report "iperf-cpu$cpu" /tmp/iperf-cpu$cpu.out
        cpu=$((cpu + 1))
    done
    sleep 1
    ethtool -S eth0 | grep -E '(rx|tx)_queue_[0-9]+_packets' >/tmp/qstats.out 2>&1
    report queue-stats /tmp/qstats.out
    for f in /sys/class/net/eth0/statistics/*; do
        say "eth0 ${f##*/} $(cat "$f")"
    done
    finish
fi

# guest -> host (tx), then host -> guest (rx, iperf3 -R)
for dir in tx rx; do
    flag=
    [ $dir = rx ] && flag=-R
    timeout $((SECS + 40)) iperf3 -c "$HOST_IP" -t "$SECS" -f m --connect-timeout 10000 $flag \
        >/tmp/iperf-$dir.out 2>&1
    rc=$?
    report "iperf-$dir" /tmp/iperf-$dir.out
    say "iperf-$dir-rc $rc"
done

# Let the last segments and FINs of iperf3 land: after this, nothing moves
# (no IPv6: ipv6.disable=1), so these counters are final and the host can
# compare them with vnetd's exactly.
sleep 1
for f in /sys/class/net/eth0/statistics/*; do
    say "eth0 ${f##*/} $(cat "$f")"
done
if [ -n "${TRACE_DROPS:-}" ]; then
    echo 0 >/sys/kernel/tracing/events/skb/kfree_skb/enable
    grep -o 'skbaddr=.*' /sys/kernel/tracing/trace | sed 's/skbaddr=[^ ]* //' |
        sort | uniq -c | sort -rn | head -n 20 >/tmp/drops.out
    report drops /tmp/drops.out
fi
# What the kernel said (debug messages too: vnet_append=virtio_net.dyndbg=+p)
dmesg | grep -iE 'virtio|eth0|net' | tail -n 20 >/tmp/dmesg.out
report dmesg /tmp/dmesg.out
finish
