#!/usr/bin/env python3
"""Test frames on the far side of a tap, for test_tap_device.sh.

The frames are the ones tap_probe builds (see tap_probe.cpp): broadcast
destination, source 02:76:6e:00:00:<tag>, ethertype 0x88b5, payload tag,
index (32-bit big-endian), then byte j = (tag*7 + index*13 + j) & 0xff.

  capture --ifname X --count K --tag T --size S [--timeout s] [--ready FILE]
      AF_PACKET capture of K frames arriving on X (written by tap_probe into
      the tap); checks they are byte-exact and in order. Creates FILE once
      the socket is bound, so the caller knows when to start writing.
  send --ifname X --count K --tag T --size S
      sends K frames out of X, i.e. into the tap's reader (tap_probe read).
  verify --count K --tag T --size S
      checks "frame <hex>" lines (tap_probe read output) on stdin.
"""
import argparse
import select
import socket
import sys
import time

ETHERTYPE = 0x88B5
PACKET_OUTGOING = 4


def frame(tag, index, size):
    size = max(size, 19)
    head = bytes([0xFF] * 6 + [0x02, 0x76, 0x6E, 0x00, 0x00, tag]) + ETHERTYPE.to_bytes(2, "big")
    head += bytes([tag]) + index.to_bytes(4, "big")
    body = bytes((tag * 7 + index * 13 + j) & 0xFF for j in range(size - len(head)))
    return head + body


def check(received, args):
    """Returns an error message, or None when `received` is exactly the frames."""
    if len(received) != args.count:
        return f"got {len(received)} frames, expected {args.count}"
    for i, got in enumerate(received):
        want = frame(args.tag, i, args.size)
        if got != want:
            return (f"frame {i} differs: {len(got)} bytes {got[:24].hex()}... "
                    f"expected {len(want)} bytes {want[:24].hex()}...")
    return None


def capture(args):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    sock.bind((args.ifname, ETHERTYPE))
    # A whole burst must fit while we are still reading: force past rmem_max (root).
    sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
    if args.ready:
        open(args.ready, "w").close()
    received = []
    deadline = time.monotonic() + args.timeout
    while len(received) < args.count:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            break
        data, addr = sock.recvfrom(70000)
        if addr[2] == PACKET_OUTGOING or data[11] != args.tag:
            continue
        received.append(data)
    return report("capture", check(received, args), len(received))


def send(args):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((args.ifname, 0))
    for i in range(args.count):
        sock.send(frame(args.tag, i, args.size))
    print(f"ok sent={args.count}")
    return 0


def verify(args):
    received = [bytes.fromhex(line.split()[1]) for line in sys.stdin if line.startswith("frame ")]
    return report("verify", check(received, args), len(received))


def report(what, error, count):
    if error:
        print(f"FAIL {what}: {error}")
        return 1
    print(f"ok {what}={count}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["capture", "send", "verify"])
    parser.add_argument("--ifname")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--tag", type=int, required=True)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--ready")
    args = parser.parse_args()
    return {"capture": capture, "send": send, "verify": verify}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
