#!/usr/bin/env python3
"""Send N raw Ethernet frames out of an interface and count the ones that come
back with their MAC addresses swapped (a reflector such as testpmd macswap on
the far side of the interface).

Runs in the interface's network namespace (ip netns exec NS ...), as root.

Every frame carries ethertype 0x88b5 (IEEE 802 local experimental, so no
protocol handler in the host stack touches it) and the payload
MAGIC | run id (u32) | sequence number (u32) | filler, padded to --size bytes.
A frame counts as reflected when it is not one of our own outgoing copies
(PACKET_OUTGOING), its destination is the source we sent from, its source the
destination we sent to, and its ethertype, run id, sequence number and filler
are intact. Each sequence number is counted once.

At most --window frames are in flight (sent and not yet back), so neither the
tap's queue (txqueuelen) nor the guest's RX ring (queue_size) can overflow:
every frame has a place to wait, and a count that differs is a real loss.

Prints one line "sent S received R duplicates D mismatched M foreign F" and
exits 0 when R == N, D == 0 and M == 0.
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
ETHERTYPE = 0x88B5
MAGIC = b"VNETD-TESTPMD-REFLECT"
PACKET_OUTGOING = 4


def mac_bytes(text):
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError(f"bad MAC {text!r}")
    return bytes(int(p, 16) for p in parts)


def build_frame(dst, src, run_id, seq, size):
    head = dst + src + struct.pack("!H", ETHERTYPE) + MAGIC + struct.pack("!II", run_id, seq)
    filler = bytes((seq + i) & 0xFF for i in range(max(0, size - len(head))))
    return head + filler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ifname", required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--dst-mac", default="02:00:00:00:00:01", help="the reflector's side")
    ap.add_argument("--src-mac", help="default: the interface's own MAC")
    ap.add_argument("--size", type=int, default=64, help="frame bytes without FCS (>= 60)")
    ap.add_argument("--window", type=int, default=64, help="most frames in flight")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="give up when nothing came back for this many seconds")
    args = ap.parse_args()

    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((args.ifname, ETH_P_ALL))
    src = mac_bytes(args.src_mac) if args.src_mac else sock.getsockname()[4][:6]
    dst = mac_bytes(args.dst_mac)
    run_id = (os.getpid() << 8 ^ int(time.time())) & 0xFFFFFFFF
    size = max(60, args.size)

    seen = bytearray(args.count)
    sent = received = duplicates = mismatched = foreign = 0
    last_progress = time.monotonic()
    header_len = 14 + len(MAGIC) + 8

    while received < args.count:
        while sent < args.count and sent - received < args.window:
            sock.send(build_frame(dst, src, run_id, sent, size))
            sent += 1
        ready, _, _ = select.select([sock], [], [], 0.2)
        if not ready:
            if time.monotonic() - last_progress > args.timeout:
                break
            continue
        # Drain everything queued without blocking.
        while True:
            try:
                frame, addr = sock.recvfrom(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if addr[2] == PACKET_OUTGOING:
                continue  # our own frame on its way out
            if (len(frame) < header_len or frame[12:14] != struct.pack("!H", ETHERTYPE)
                    or frame[14:14 + len(MAGIC)] != MAGIC):
                foreign += 1
                continue
            rid, seq = struct.unpack_from("!II", frame, 14 + len(MAGIC))
            if rid != run_id or seq >= args.count:
                foreign += 1
                continue
            if frame[:14] != src + dst + struct.pack("!H", ETHERTYPE) or \
                    frame[6 + 6 + 2:size] != build_frame(dst, src, run_id, seq, size)[14:]:
                mismatched += 1
                continue
            if seen[seq]:
                duplicates += 1
                continue
            seen[seq] = 1
            received += 1
            last_progress = time.monotonic()

    print(f"sent {sent} received {received} duplicates {duplicates} "
          f"mismatched {mismatched} foreign {foreign}")
    if received != args.count or duplicates or mismatched:
        missing = [i for i in range(args.count) if not seen[i]][:10]
        if missing:
            print(f"first missing sequence numbers: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
