#!/usr/bin/env python3
"""ICMP echo requests at a fixed interval, each reply timestamped: the ping
gap a live migration leaves, to the millisecond (busybox ping -i 0.01 sends
as often, but prints no time per reply; vnet-lifecycle-bench.sh runs this
in the network namespace).

  icmp_prober.py ADDRESS INTERVAL_S DEADLINE_S

Sends an echo request to ADDRESS every INTERVAL_S seconds (one raw ICMP
socket, so root) until SIGINT/SIGTERM or DEADLINE_S. Reports on stdout,
one line each (times in seconds since the epoch):
  probing ADDRESS INTERVAL_S
  first-reply TIME           the first reply (ARP resolved, the guest up)
  reply SEQ SENT RECV        every reply (RECV - SENT: its round trip)
  sent N received M
  max-gap-ms MS from TIME to TIME   the longest time between two replies
  done
The caller picks the gaps of its own window from the reply lines.
"""
import os
import select
import signal
import socket
import struct
import sys
import time


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def request(ident, seq):
    payload = b"vnet-lifecycle-probe"
    header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    return struct.pack("!BBHHH", 8, 0, checksum(header + payload), ident, seq) + payload


def say(*words):
    print(*words, flush=True)


def main():
    address, interval = sys.argv[1], float(sys.argv[2])
    deadline = time.time() + float(sys.argv[3])
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    sent_at = {}
    seq = received = 0
    last = first = None
    max_gap, gap_from, gap_to = 0.0, 0.0, 0.0
    say("probing", address, interval)
    next_send = time.time()
    while not stop and time.time() < deadline:
        now = time.time()
        if now >= next_send:
            seq = (seq + 1) & 0xFFFF
            sent_at[seq] = now
            try:
                sock.sendto(request(ident, seq), (address, 0))
            except OSError:
                pass  # no route / neighbour yet: a lost probe like any other
            next_send += interval
            if next_send < now:  # we were descheduled: do not burst to catch up
                next_send = now + interval
            continue
        try:
            ready, _, _ = select.select([sock], [], [], max(0.0, next_send - now))
        except InterruptedError:
            continue
        if not ready:
            continue
        packet = sock.recv(2048)
        recv = time.time()
        ihl = (packet[0] & 0x0F) * 4
        if len(packet) < ihl + 8:
            continue
        kind, _, _, rid, rseq = struct.unpack("!BBHHH", packet[ihl:ihl + 8])
        if kind != 0 or rid != ident or rseq not in sent_at:
            continue
        received += 1
        if first is None:
            first = recv
            say("first-reply", f"{recv:.6f}")
        elif recv - last > max_gap:
            max_gap, gap_from, gap_to = recv - last, last, recv
        last = recv
        say("reply", rseq, f"{sent_at.pop(rseq):.6f}", f"{recv:.6f}")
    say("sent", seq, "received", received)
    say("max-gap-ms", f"{max_gap * 1000:.1f}", "from", f"{gap_from:.6f}", "to", f"{gap_to:.6f}")
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
