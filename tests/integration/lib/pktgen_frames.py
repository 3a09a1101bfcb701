#!/usr/bin/env python3
"""vnet-pktgen's frames, rebuilt in Python: check captures of them, and send
them from the far side of a tap.

The format is src/driver/frame_format.hpp and packet_builder.cpp:
Ethernet 02:00:00:00:00:02 <- 02:00:00:00:00:01 / IPv4 198.18.0.1 ->
198.18.0.2 (no options, id 0, DF, TTL 64) / UDP 9 -> 9 (checksum 0) or
TCP 9 -> 9 (GSO runs), then a 16-byte stamp (u64 magic "VNETPGEN", u64
sequence number, both little-endian) and the pattern byte (o * 7 + 0x5a) &
0xff at L4-payload offset o >= 16. With --size-range, frame k has the k-th
length of pktgen's xorshift64* generator (tx_generator.cpp), so the exact
length of every sequence number is known here too.

  check-udp --pcap F --count N (--size S | --size-range A-B [--seed 1])
      every frame of N (sequence numbers 0..N-1) must be in the capture
      once, byte for byte as pktgen built it, at its exact length.
  check-tcp-stream --pcap F --count N --size S
      pktgen --gso frames (S bytes each, one TCP byte stream: frame k holds
      stream bytes k*P .. k*P+P-1, P = S - 54), captured whole (a GSO skb),
      segmented or merged: the captured TCP payloads must cover the stream
      exactly once, byte for byte. With --vnet-hdr (capture's F2) every
      frame longer than --mtu + 14 must be a GSO skb: TCPV4, gso_size
      --mss, NEEDS_CSUM at the TCP checksum; that is, the guest's
      virtio_net_hdr reached the kernel intact.
  capture --ifname X --pcap F --count N [--vnet-hdr F2] [--ready F3]
      AF_PACKET capture of the frames X receives (not the ones it sends)
      into a pcap, until N frames came or nothing came for --timeout s.
      With --vnet-hdr the socket asks for PACKET_VNET_HDR and writes each
      frame's virtio_net_hdr (as the kernel's skb carries it: GSO type and
      size, checksum offload) to F2, one line per frame, for check-tcp-stream.
      Prints "captured N dropped D" (D: the socket's PACKET_STATISTICS).
  inject --ifname X --count N | --duration S (--size S | --size-range A-B)
      sends pktgen-format frames out of X (AF_PACKET), sequence numbers
      0.., optionally paced (--rate PPS), past the device's qdisc. Flow
      controlled: a frame the device refuses (a tap whose queue is full:
      ENOBUFS, and the kernel counts it in tx_dropped) is sent again after
      a short pause. Prints "sent N bytes B seconds T queue-full F": N
      distinct frames went out, F refusals were retried.

check-* print one summary line "key value ..." and exit 0 only when the
capture is exactly what was sent.
"""

import argparse
import errno
import socket
import struct
import sys
import time

MAGIC = 0x4E45475054454E56  # "VNETPGEN" as a little-endian u64
ETH_LEN, IP_LEN, UDP_LEN, TCP_LEN, STAMP_LEN = 14, 20, 8, 20, 16
UDP_PAYLOAD = ETH_LEN + IP_LEN + UDP_LEN  # 42
TCP_PAYLOAD = ETH_LEN + IP_LEN + TCP_LEN  # 54
SRC_IP, DST_IP = bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2])
MAX_FRAME = ETH_LEN + 65535
PATTERN = bytes((o * 7 + 0x5A) & 0xFF for o in range(MAX_FRAME))
MASK64 = (1 << 64) - 1


def mac_bytes(text):
    parts = text.split(":")
    if len(parts) != 6:
        raise argparse.ArgumentTypeError(f"bad MAC {text!r}")
    return bytes(int(p, 16) for p in parts)


def size_range(text):
    lo, _, hi = text.partition("-")
    lo, hi = int(lo), int(hi or lo)
    if not 60 <= lo <= hi <= 9018:
        raise argparse.ArgumentTypeError("sizes must be 60 <= MIN <= MAX <= 9018")
    return lo, hi


def ip_checksum(header):
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame_lengths(lo, hi, seed):
    """pktgen's TxGenerator::next_frame_len(), frame after frame."""
    if lo == hi:
        while True:
            yield lo
    state = (seed | 1) & MASK64
    span = hi - lo + 1
    while True:
        state ^= state >> 12
        state ^= (state << 25) & MASK64
        state ^= state >> 27
        r = (state * 0x2545F4914F6CDD1D) & MASK64
        yield lo + (r >> 32) % span


class UdpFrames:
    """Builds frame k of length n; the headers depend on n only (cached)."""

    def __init__(self, dst_mac, src_mac):
        self.eth = dst_mac + src_mac + b"\x08\x00"
        self.heads = {}

    def head(self, n):
        h = self.heads.get(n)
        if h is None:
            ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, n - ETH_LEN, 0, 0x4000, 64, 17, 0,
                                       SRC_IP, DST_IP))
            struct.pack_into("!H", ip, 10, ip_checksum(bytes(ip)))
            h = self.eth + bytes(ip) + struct.pack("!HHHH", 9, 9, n - ETH_LEN - IP_LEN, 0)
            self.heads[n] = h
        return h

    def build(self, seq, n):
        return (self.head(n) + struct.pack("<QQ", MAGIC, seq)
                + PATTERN[STAMP_LEN:n - UDP_PAYLOAD])


def read_pcap(path):
    """Yields (captured bytes, original length) for each record of a pcap."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise SystemExit(f"{path}: not a pcap file ({len(data)} bytes)")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise SystemExit(f"{path}: not a pcap file (magic {magic.hex()})")
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    if linktype != 1:
        raise SystemExit(f"{path}: link type {linktype}, expected Ethernet (1)")
    rec = struct.Struct(endian + "IIII")
    off = 24
    while off + 16 <= len(data):
        _, _, incl, orig = rec.unpack_from(data, off)
        off += 16
        yield data[off:off + incl], orig
        off += incl


def parse_ours(frame, proto):
    """(l4 offset, sequence) when `frame` is IPv4/proto with pktgen's stamp, else None."""
    payload = UDP_PAYLOAD if proto == 17 else TCP_PAYLOAD
    if len(frame) < payload + STAMP_LEN or frame[12:14] != b"\x08\x00" or frame[14] != 0x45 \
            or frame[23] != proto:
        return None
    magic, seq = struct.unpack_from("<QQ", frame, payload)
    return (payload, seq) if magic == MAGIC else None


def check_udp(args):
    lo, hi = args.size_range or (args.size, args.size)
    lengths = frame_lengths(lo, hi, args.seed)
    want_len = [next(lengths) for _ in range(args.count)]
    builder = UdpFrames(args.dst_mac, args.src_mac)
    seen = bytearray(args.count)
    captured = verified = foreign = truncated = duplicates = bad = out_of_range = 0
    ours_bytes = 0
    first_bad = None
    for frame, orig in read_pcap(args.pcap):
        captured += 1
        if len(frame) != orig:
            truncated += 1
            continue
        parsed = parse_ours(frame, 17)
        if parsed is None:
            foreign += 1
            continue
        seq = parsed[1]
        if seq >= args.count:
            out_of_range += 1
            continue
        ours_bytes += len(frame)
        if frame != builder.build(seq, want_len[seq]):
            bad += 1
            if first_bad is None:
                first_bad = (f"frame seq {seq}: {len(frame)} bytes, expected {want_len[seq]}; "
                             f"got {frame[:48].hex()}... expected {builder.build(seq, want_len[seq])[:48].hex()}...")
            continue
        if seen[seq]:
            duplicates += 1
            continue
        seen[seq] = 1
        verified += 1
    missing = args.count - sum(seen)
    print(f"captured {captured} verified {verified} bytes {ours_bytes} missing {missing} "
          f"bad {bad} duplicates {duplicates} foreign {foreign} truncated {truncated} "
          f"out-of-range {out_of_range}")
    if first_bad:
        print(f"first bad {first_bad}", file=sys.stderr)
    if missing:
        print(f"first missing sequence numbers: {[i for i in range(args.count) if not seen[i]][:10]}",
              file=sys.stderr)
    ok = verified == args.count and not (bad or duplicates or truncated or out_of_range)
    return 0 if ok else 1


VNET_HDR = struct.Struct("=BBHHHH")  # struct virtio_net_hdr (no num_buffers)
GSO_TCPV4, NEEDS_CSUM = 1, 1


def capture(args):
    sol_packet, packet_vnet_hdr, packet_statistics = 263, 15, 6
    # Protocol 0: nothing is queued until bind() names the interface.
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    if args.vnet_hdr:
        sock.setsockopt(sol_packet, packet_vnet_hdr, 1)
    sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 256 << 20)
    sock.bind((args.ifname, 0x0003))  # ETH_P_ALL (Python applies htons)
    sock.getsockopt(sol_packet, packet_statistics, 8)  # reading resets the counters
    if args.ready:
        open(args.ready, "w").close()
    pcap = open(args.pcap, "wb")
    pcap.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    hdrs = open(args.vnet_hdr, "w") if args.vnet_hdr else None
    captured = 0
    sock.settimeout(args.timeout)
    while captured < args.count:
        try:
            data, addr = sock.recvfrom(1 << 18)
        except socket.timeout:
            break
        if addr[2] == 4:  # PACKET_OUTGOING
            continue
        if hdrs:
            flags, gso_type, hdr_len, gso_size, csum_start, csum_offset = VNET_HDR.unpack_from(data)
            data = data[VNET_HDR.size:]
            hdrs.write(f"{len(data)} {flags} {gso_type} {gso_size} {csum_start} {csum_offset}\n")
        now = time.time()
        pcap.write(struct.pack("<IIII", int(now), int(now % 1 * 1e6), len(data), len(data)))
        pcap.write(data)
        captured += 1
    _, drops = struct.unpack("II", sock.getsockopt(sol_packet, packet_statistics, 8))
    pcap.close()
    if hdrs:
        hdrs.close()
    print(f"captured {captured} dropped {drops}")
    return 0


def check_vnet_headers(path, mtu, mss):
    """(frames, GSO frames, first problem or None) of a capture's virtio_net_hdr lines."""
    frames = gso = 0
    problem = None
    with open(path) as f:
        for line in f:
            length, flags, gso_type, gso_size, csum_start, csum_offset = map(int, line.split())
            frames += 1
            if gso_type == GSO_TCPV4:
                gso += 1
            if length <= ETH_LEN + mtu:
                continue  # fits the link: may have been segmented, needs no metadata
            want = (NEEDS_CSUM, GSO_TCPV4, mss, ETH_LEN + IP_LEN, 16)
            got = (flags & NEEDS_CSUM, gso_type, gso_size, csum_start, csum_offset)
            if got != want and problem is None:
                problem = (f"a {length}-byte frame has flags/gso_type/gso_size/csum_start/"
                           f"csum_offset {got}, expected {want}")
    return frames, gso, problem


def check_tcp_stream(args):
    """The TCP payloads of our flow must tile stream bytes 0 .. count*P exactly."""
    p = args.size - TCP_PAYLOAD
    total = args.count * p
    if total >= 1 << 32:
        raise SystemExit("count * payload must stay below 2^32 (one TCP sequence space)")

    def expected(start, length):
        out = bytearray()
        while length > 0:
            k, o = divmod(start, p)
            n = min(length, p - o)
            chunk = struct.pack("<QQ", MAGIC, k) + PATTERN[STAMP_LEN:p]
            out += chunk[o:o + n]
            start += n
            length -= n
        return bytes(out)

    pieces = []
    captured = ours = foreign = truncated = bad = bad_ip = 0
    first_bad = None
    for frame, orig in read_pcap(args.pcap):
        captured += 1
        if len(frame) != orig:
            truncated += 1
            continue
        if (len(frame) < TCP_PAYLOAD or frame[12:14] != b"\x08\x00" or frame[14] != 0x45
                or frame[23] != 6 or frame[26:30] != SRC_IP or frame[30:34] != DST_IP
                or frame[34:38] != b"\x00\x09\x00\x09"):
            foreign += 1
            continue
        ours += 1
        if ip_checksum(frame[14:34]) != 0:
            bad_ip += 1
        ip_total = struct.unpack_from("!H", frame, 16)[0]
        doff = (frame[46] >> 4) * 4
        start = struct.unpack_from("!I", frame, 38)[0]
        payload = frame[ETH_LEN + IP_LEN + doff:ETH_LEN + ip_total]
        if ETH_LEN + ip_total != len(frame) or start + len(payload) > total:
            bad += 1
            first_bad = first_bad or f"frame of {len(frame)} bytes, ip length {ip_total}, tcp seq {start}"
            continue
        if payload != expected(start, len(payload)):
            bad += 1
            first_bad = first_bad or f"payload at stream offset {start} ({len(payload)} bytes) differs"
            continue
        pieces.append((start, start + len(payload)))
    pieces.sort()
    covered = overlap = 0
    holes = []
    pos = 0
    for a, b in pieces:
        if a > pos:
            holes.append((pos, a))
        elif a < pos:
            overlap += min(b, pos) - a
        covered += max(0, b - max(a, pos))
        pos = max(pos, b)
    if pos < total:
        holes.append((pos, total))
    hdr_problem = None
    hdr_note = ""
    if args.vnet_hdr:
        hdr_frames, gso_frames, hdr_problem = check_vnet_headers(args.vnet_hdr, args.mtu, args.mss)
        hdr_note = f" gso-skbs {gso_frames}"
        if hdr_frames != captured:
            hdr_problem = hdr_problem or f"{hdr_frames} header lines for {captured} frames"
    print(f"captured {captured} tcp-frames {ours} stream-bytes {covered} expected-bytes {total} "
          f"holes {len(holes)} overlap-bytes {overlap} bad {bad} bad-ip-checksum {bad_ip} "
          f"foreign {foreign} truncated {truncated}{hdr_note}")
    if hdr_problem:
        print(f"virtio_net_hdr: {hdr_problem}", file=sys.stderr)
    if first_bad:
        print(f"first bad {first_bad}", file=sys.stderr)
    if holes:
        print(f"first holes (stream byte ranges): {holes[:5]}", file=sys.stderr)
    ok = covered == total and not (holes or overlap or bad or bad_ip or truncated or hdr_problem)
    return 0 if ok else 1


def inject(args):
    lo, hi = args.size_range or (args.size, args.size)
    lengths = frame_lengths(lo, hi, args.seed)
    builder = UdpFrames(args.dst_mac, args.src_mac)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # send only: no receive queue
    # Straight to the device, past its qdisc: a tap whose queue is full then
    # refuses the frame with ENOBUFS (through a qdisc the drop is silent).
    sock.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
    sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_SNDBUFFORCE", 32), 16 << 20)
    sock.bind((args.ifname, 0))
    count = args.count or (1 << 62)
    deadline = time.monotonic() + args.duration if args.duration else None
    # Templates of each length with the sequence number patched in place:
    # one struct.pack_into per frame keeps the sender fast.
    templates = {}
    sent = sent_bytes = full = 0
    start = time.monotonic()
    for seq in range(count):
        if deadline is not None and (seq & 255) == 0 and time.monotonic() >= deadline:
            break
        if args.rate and (seq & 63) == 0:
            ahead = seq / args.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        n = next(lengths)
        t = templates.get(n)
        if t is None:
            t = templates[n] = bytearray(builder.build(0, n))
        struct.pack_into("<Q", t, UDP_PAYLOAD + 8, seq)
        while True:
            try:
                sock.send(t)
                break
            except OSError as e:
                if e.errno != errno.ENOBUFS:
                    raise
                # The tap's queue is full (the kernel counted the frame in
                # its tx_dropped): let the reader catch up, send it again.
                full += 1
                time.sleep(0.00005)
        sent += 1
        sent_bytes += n
    seconds = time.monotonic() - start
    print(f"sent {sent} bytes {sent_bytes} seconds {seconds:.3f} queue-full {full}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["check-udp", "check-tcp-stream", "capture", "inject"])
    ap.add_argument("--pcap")
    ap.add_argument("--ifname")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--rate", type=float, default=0, help="inject: frames per second (0 = unpaced)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--size-range", type=size_range)
    ap.add_argument("--seed", type=int, default=1, help="pktgen's --seed (default 1)")
    ap.add_argument("--dst-mac", type=mac_bytes, default=mac_bytes("02:00:00:00:00:02"))
    ap.add_argument("--src-mac", type=mac_bytes, default=mac_bytes("02:00:00:00:00:01"))
    ap.add_argument("--vnet-hdr", help="capture: write, check-tcp-stream: read virtio_net_hdr lines")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--mss", type=int, default=1448)
    ap.add_argument("--timeout", type=float, default=10.0, help="capture: idle seconds before giving up")
    ap.add_argument("--ready", help="capture: created once the socket is bound")
    args = ap.parse_args()
    if args.command == "capture" and (not args.ifname or not args.pcap or args.count <= 0):
        ap.error("capture needs --ifname, --pcap and --count")
    if args.command.startswith("check") and (not args.pcap or args.count <= 0):
        ap.error(f"{args.command} needs --pcap and --count")
    if args.command == "inject" and (not args.ifname or not (args.count or args.duration)):
        ap.error("inject needs --ifname and --count or --duration")
    return {"check-udp": check_udp, "check-tcp-stream": check_tcp_stream, "capture": capture,
            "inject": inject}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
