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
#   vnet_stream=1   (optional) stream mode (test_qemu_migration.sh): instead
#                   of iperf3, make a file of vnet_data_kib KiB (default
#                   16384) from /dev/urandom ("send-sha256", "send-size"),
#                   wait for the host to answer a ping, then send the file
#                   over one TCP connection (busybox nc, port 5300) in 16 KiB
#                   chunks, one every 40 ms, so that the stream outlasts a
#                   live migration; once the receiver sends a byte back (it
#                   does when the migration has completed) the rest goes at
#                   once ("stream-rc", the pipeline's exit status). Before
#                   that it listens on port 5301 for the host's stream the
#                   other way (lib/stream_sender.py), received into a file
#                   whose sha256 and size it reports at its end
#                   ("recv-sha256", "recv-size", "recv-rc"); at the end,
#                   eth0's carrier changes and the non-zero TCP counters
#                   ("tcp NAME VALUE": retransmissions, DSACKs), which show
#                   what a back end's restart under the stream cost
#                   (test_qemu_restart.sh)
#   vnet_online_kernel=N[,N...]  (optional, memory hotplug,
#                   test_qemu_memory_hotplug.sh) a background loop onlines
#                   every memory block that appears offline (a hotplugged
#                   DIMM: the kernel's memhp_default_state is offline), once
#                   each: as online_kernel if its number is listed (kernel
#                   allocations, RX buffers among them, prefer that ZONE_NORMAL
#                   over the boot memory's DMA32), else as online_movable
#                   (movable pages only, so the guest can offline it again for
#                   device_del); "online memoryN ZONE rc", and "gone memoryN"
#                   once an onlined block was removed
#   vnet_peer=IP    (optional) peer mode, two guests on one vnetd and no host
#   vnet_role=server|client  side (test_qemu_two_guests.sh): instead of all
#                   of the above, wait for the other guest (IP) to answer a
#                   ping (up to vnet_wait=N seconds, default 60, after eth0
#                   is up: the two boot at the same time, not in step), then
#                   both ping it (ping-rc, 3 packets). The server listens
#                   first, with deadlines: one iperf3 test (iperf3 -s -1,
#                   "iperf-server:" lines) and one TCP stream into a file
#                   (busybox nc -l, port 5300), whose md5sum and size it
#                   reports ("recv-md5", "recv-size"). The client sends
#                   vnet_secs of iperf3 ("iperf-client:") and then a file of
#                   vnet_data_kib KiB (default 6144) from /dev/urandom
#                   ("send-md5", "send-size"), each retried while the
#                   server does not listen yet, until a deadline. Both then
#                   wait for their TCP connections to finish closing, so
#                   that the eth0 counters they report are final.
#   vnet_serve=N    (optional) serve mode (test_cni_podman.sh): no traffic
#                   of its own; with eth0 up it says "serving" and answers
#                   whatever pings it until N ICMP echo requests came in
#                   (or vnet_wait=S seconds passed, default 120), then
#                   reports "icmp InEchos X OutEchoReps Y" and eth0's
#                   counters
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
    vnet_stream=1) STREAM=1 ;;
    vnet_peer=*) PEER_IP=${w#*=} ;;
    vnet_role=*) ROLE=${w#*=} ;;
    vnet_wait=*) PEER_WAIT=${w#*=} ;;
    vnet_data_kib=*) DATA_KIB=${w#*=} ;;
    vnet_online_kernel=*) ONLINE_KERNEL=${w#*=} ;;
    vnet_serve=*) SERVE=${w#*=} ;;
    esac
done
# Memory hotplug: see vnet_online_kernel above.
if [ -n "${ONLINE_KERNEL:-}" ]; then
    say "memory block_size_bytes $(cat /sys/devices/system/memory/block_size_bytes)"
    (
        seen=' '
        while true; do
            for d in /sys/devices/system/memory/memory*; do
                n=${d##*/memory}
                case "$seen" in *" $n "*) continue ;; esac
                [ "$(cat "$d/state" 2>/dev/null)" = offline ] || continue
                zone=online_movable
                case ",$ONLINE_KERNEL," in *",$n,"*) zone=online_kernel ;; esac
                echo "$zone" >"$d/state" 2>/tmp/online.err
                rc=$? # the write into sysfs: the kernel's answer
                say "online memory$n $zone $rc $(cat /tmp/online.err)"
                seen="$seen$n "
            done
            for n in $seen; do
                [ -e "/sys/devices/system/memory/memory$n" ] && continue
                say "gone memory$n"
                seen=$(echo "$seen" | sed "s/ $n / /")
            done
            sleep 0.2
        done
    ) &
fi
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

# report_eth0: eth0's counters, one line each.
report_eth0() {
    for f in /sys/class/net/eth0/statistics/*; do
        say "eth0 ${f##*/} $(cat "$f")"
    done
}

# report_tcp: the non-zero TCP counters (/proc/net/snmp "Tcp:", /proc/net/netstat
# "TcpExt:": a header line of names, then one of values), one line each.
report_tcp() {
    cat /proc/net/snmp /proc/net/netstat | awk '
        $1 != "Tcp:" && $1 != "TcpExt:" { next }
        !(($1) in seen) { seen[$1] = 1; for (i = 2; i <= NF; i++) name[$1, i] = $i; next }
        { for (i = 2; i <= NF; i++) if ($i != 0) print "VNET-GUEST tcp " name[$1, i] " " $i }'
}

# now: seconds since boot (whole seconds; the deadlines below count in them)
now() {
    read -r up _ </proc/uptime
    echo "${up%%.*}"
}

# icmp_count NAME: the Icmp counter NAME of /proc/net/snmp (a header line of
# names, then one of values).
icmp_count() {
    awk -v want="$1" '$1 == "Icmp:" { if (!c) { for (i = 2; i <= NF; i++) if ($i == want) c = i } else print $c }' \
        /proc/net/snmp
}

# Serve mode: only answer pings; see the header.
if [ -n "${SERVE:-}" ]; then
    SERVE_WAIT=${PEER_WAIT:-120}
    START=$(now)
    say "serving: $SERVE echo requests within ${SERVE_WAIT}s"
    while [ "$(icmp_count InEchos)" -lt "$SERVE" ] && [ "$(now)" -lt $((START + SERVE_WAIT)) ]; do
        usleep 100000
    done
    sleep 1 # the last reply on its way out: counters final
    say "icmp InEchos $(icmp_count InEchos) OutEchoReps $(icmp_count OutEchoReps)"
    report_eth0
    finish
fi

# Stream mode: one paced TCP stream to the host; see the header. The guest
# is migrated while it runs: what it prints first is in the source QEMU's
# console, the rest in the destination's.
if [ -n "${STREAM:-}" ]; then
    DATA_KIB=${DATA_KIB:-16384}
    CHUNK_KIB=16
    dd if=/dev/urandom of=/tmp/send.bin bs=1024 count="$DATA_KIB" 2>/tmp/dd.err || report dd /tmp/dd.err
    say "send-sha256 $(sha256sum </tmp/send.bin | cut -d " " -f 1)"
    say "send-size $(wc -c </tmp/send.bin)"
    # stdin: a FIFO nobody writes (see peer mode): nc reads the host's
    # stream to its end.
    mkfifo /tmp/nc-stdin
    exec 3<>/tmp/nc-stdin
    timeout 300 nc -l -p 5301 <&3 >/tmp/recv.bin 2>/tmp/nc-l.err &
    NC_PID=$!
    i=0
    until ping -c 1 -W 1 "$HOST_IP" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -ge 60 ]; then
            say "host $HOST_IP did not answer"
            finish
        fi
        sleep 0.5
    done
    # send_chunks: the file on stdout, a chunk at a time while /tmp/ctl
    # (what the receiver sent back) is empty, then the rest in one go.
    send_chunks() {
        n=0
        chunks=$(((DATA_KIB + CHUNK_KIB - 1) / CHUNK_KIB))
        while [ $n -lt $chunks ]; do
            if [ -s /tmp/ctl ]; then
                dd if=/tmp/send.bin bs=${CHUNK_KIB}k skip=$n 2>/dev/null
                return
            fi
            dd if=/tmp/send.bin bs=${CHUNK_KIB}k skip=$n count=1 2>/dev/null || return 1
            usleep 40000
            n=$((n + 1))
        done
    }
    : >/tmp/ctl
    say "stream start"
    send_chunks | timeout 300 nc -w 10 "$HOST_IP" 5300 >/tmp/ctl 2>/tmp/nc.err
    say "stream-rc $?"
    report nc /tmp/nc.err
    say "stream-ctl $(wc -c </tmp/ctl)"
    wait "$NC_PID"
    say "recv-rc $?"
    report nc-l /tmp/nc-l.err
    say "recv-sha256 $(sha256sum </tmp/recv.bin | cut -d " " -f 1)"
    say "recv-size $(wc -c </tmp/recv.bin)"
    report_eth0
    say "eth0 carrier_changes $(cat /sys/class/net/eth0/carrier_changes)"
    report_tcp
    finish
fi

# Peer mode: everything goes to the other guest; see the header.
if [ -n "${PEER_IP:-}" ]; then
    PEER_WAIT=${PEER_WAIT:-60}
    DATA_KIB=${DATA_KIB:-6144}
    DATA_PORT=5300
    say "peer mode: role ${ROLE:-none} peer $PEER_IP wait ${PEER_WAIT}s"
    case "${ROLE:-}" in
    server | client) ;;
    *)
        say "vnet_role must be server or client"
        finish
        ;;
    esac
    START=$(now)
    if [ "$ROLE" = server ]; then
        # Listening before the first ping: the client starts as soon as it
        # has its replies. Each listener has a deadline of its own (iperf3:
        # timeout; nc: -w bounds the accept, timeout the whole stream).
        timeout $((PEER_WAIT + SECS + 60)) iperf3 -s -1 -f m >/tmp/iperf-server.out 2>&1 &
        IPERF_PID=$!
        # nc's stdin is a FIFO that nobody writes and that never ends: at
        # EOF on stdin busybox nc shuts down its sending half, and the
        # client, seeing that EOF, would stop before it sent everything.
        mkfifo /tmp/nc-stdin
        exec 3<>/tmp/nc-stdin
        timeout $((PEER_WAIT + SECS + 90)) nc -l -p $DATA_PORT -w $((PEER_WAIT + SECS + 60)) \
            <&3 >/tmp/recv.bin 2>/tmp/nc.err &
        NC_PID=$!
    else
        # Made while the peer may still be booting.
        dd if=/dev/urandom of=/tmp/send.bin bs=1024 count="$DATA_KIB" 2>/tmp/dd.err ||
            report dd /tmp/dd.err
        say "send-md5 $(md5sum </tmp/send.bin | cut -d " " -f 1)"
        say "send-size $(wc -c </tmp/send.bin)"
    fi

    # The peer is there when it answers one ping (ARP included).
    until ping -c 1 -W 1 "$PEER_IP" >/dev/null 2>&1; do
        if [ "$(now)" -ge $((START + PEER_WAIT)) ]; then
            PEER_GONE=1
            break
        fi
        sleep 0.5 # ping fails at once when ARP has just failed
    done
    if [ -n "${PEER_GONE:-}" ]; then
        say "peer $PEER_IP did not answer within ${PEER_WAIT}s"
    else
        say "peer $PEER_IP answered after $(($(now) - START))s"
        ping -c 3 -i 0.5 -W 5 "$PEER_IP" >/tmp/ping.out 2>&1
        rc=$?
        report ping /tmp/ping.out
        say "ping-rc $rc"
    fi

    # retry_connect SECS OUT CMD...: CMD (output to OUT) again while it
    # fails only because nothing listens yet, until SECS from now.
    retry_connect() {
        end=$(($(now) + $1))
        out=$2
        shift 2
        while true; do
            "$@" >"$out" 2>&1
            rc=$?
            [ $rc = 0 ] && return 0
            grep -qiE 'connection refused|unable to connect' "$out" || return $rc
            [ "$(now)" -ge "$end" ] && return $rc
            sleep 0.5
        done
    }

    if [ "$ROLE" = server ]; then
        if [ -n "${PEER_GONE:-}" ]; then
            kill "$IPERF_PID" "$NC_PID" 2>/dev/null
        fi
        wait "$IPERF_PID"
        say "iperf-server-rc $?"
        report iperf-server /tmp/iperf-server.out
        wait "$NC_PID"
        say "nc-rc $?"
        report nc /tmp/nc.err
        say "recv-md5 $(md5sum </tmp/recv.bin | cut -d " " -f 1)"
        say "recv-size $(wc -c </tmp/recv.bin)"
    elif [ -z "${PEER_GONE:-}" ]; then
        retry_connect 30 /tmp/iperf-client.out timeout $((SECS + 40)) \
            iperf3 -c "$PEER_IP" -t "$SECS" -f m --connect-timeout 10000
        say "iperf-client-rc $?"
        report iperf-client /tmp/iperf-client.out
        # At the end of the file nc shuts down its sending half; it exits
        # when the server, having read everything, closes the connection.
        retry_connect 30 /tmp/nc.out timeout 60 nc -w 10 "$PEER_IP" $DATA_PORT </tmp/send.bin
        say "nc-rc $?"
        report nc /tmp/nc.out
    fi

    # Final counters: every TCP connection has closed on this side (only
    # TIME_WAIT, whose last ACK is sent, or nothing left: the server's
    # LAST_ACK ends with the client's last packet), and then a second for
    # the driver to reclaim what it sent last (it counts tx on completion).
    end=$(($(now) + 20))
    while [ "$(awk 'NR > 1 && $4 != "06" && $4 != "0A"' /proc/net/tcp | wc -l)" != 0 ]; do
        if [ "$(now)" -ge "$end" ]; then
            say "tcp connections still open"
            awk 'NR > 1' /proc/net/tcp >/tmp/tcp.out
            report tcp /tmp/tcp.out
            break
        fi
        sleep 0.1
    done
    sleep 1
    report_eth0
    finish
fi

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
    report_eth0
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
    report_eth0
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
report_eth0
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
