#!/usr/bin/env python3
"""Prints every RARP frame (ethertype 0x8035) that arrives on an interface.

  rarp_capture.py IFACE

An AF_PACKET socket bound to IFACE for that ethertype only. Prints "ready"
once bound, then one line per frame:
  rarp TIME src=MAC dst=MAC op=N sender=MAC target=MAC
(TIME in seconds since the epoch; op 3 is a reverse request, the one
QEMU's and vhost-net's announcements send). Exits 0 on SIGTERM.
"""
import signal
import socket
import struct
import sys
import time

ETH_P_RARP = 0x8035


def mac(b):
    return ":".join(f"{x:02x}" for x in b)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_RARP))
    sock.bind((sys.argv[1], ETH_P_RARP))
    print("ready", flush=True)
    while True:
        frame = sock.recv(2048)
        if len(frame) < 14 + 28:
            print(f"rarp {time.time():.3f} short frame of {len(frame)} bytes", flush=True)
            continue
        (op,) = struct.unpack("!H", frame[20:22])
        print(f"rarp {time.time():.3f} src={mac(frame[6:12])} dst={mac(frame[0:6])} op={op}"
              f" sender={mac(frame[22:28])} target={mac(frame[32:38])}", flush=True)


if __name__ == "__main__":
    main()
