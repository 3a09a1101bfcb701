#!/usr/bin/env python3
"""The receiving end of a guest's checksummed TCP stream (guest_init.sh
vnet_stream=1), run in the test's network namespace.

  stream_receiver.py ADDRESS PORT DEADLINE_SECONDS

Accepts one connection and reads it to its end, reporting on stdout, one
line each (times are seconds since the epoch, the test's `date +%s.%N`):
  listening ADDRESS PORT
  accepted PEER
  progress TIME BYTES        every 0.5 s while the stream runs
  fast TIME BYTES            SIGUSR1 arrived: one byte is sent back to the
                             sender, which then stops pacing its chunks
  recv-bytes N, recv-sha256 HEX, bytes-after-fast N
  max-gap-ms MS from TIME to TIME   the longest time between two reads that
                             returned data (the stall the stream saw)
  gap-ms MS from TIME to TIME  each such time of 20 ms or more (the caller
                             tells the pacing from the migration's stall)
  done
Exit status 1 (with a "error ..." line) when nothing connected or the
stream did not end within DEADLINE_SECONDS.
"""
import hashlib
import signal
import socket
import sys
import time


def say(*words):
    print(*words, flush=True)


def main():
    address, port, deadline = sys.argv[1], int(sys.argv[2]), time.time() + float(sys.argv[3])
    fast_requested = []
    signal.signal(signal.SIGUSR1, lambda *_: fast_requested.append(time.time()))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, port))
    listener.listen(1)
    listener.settimeout(0.2)
    say("listening", address, port)
    conn = None
    while conn is None:
        if time.time() > deadline:
            say("error nothing connected")
            return 1
        try:
            conn, peer = listener.accept()
        except socket.timeout:
            continue
    listener.close()
    say("accepted", f"{peer[0]}:{peer[1]}")
    conn.settimeout(0.1)
    digest = hashlib.sha256()
    total = after_fast = 0
    fast_sent = False
    last_data = time.time()
    max_gap, gap_from, gap_to = 0.0, last_data, last_data
    next_progress = last_data + 0.5
    gaps = []
    while True:
        now = time.time()
        if now > deadline:
            say("error the stream did not end in time; bytes", total)
            return 1
        if fast_requested and not fast_sent:
            conn.sendall(b"F")
            fast_sent = True
            say("fast", f"{now:.3f}", total)
        if now >= next_progress:
            say("progress", f"{now:.3f}", total)
            next_progress = now + 0.5
        try:
            data = conn.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        now = time.time()
        if now - last_data > max_gap:
            max_gap, gap_from, gap_to = now - last_data, last_data, now
        if now - last_data >= 0.02:
            gaps.append((now - last_data, last_data, now))
        last_data = now
        digest.update(data)
        total += len(data)
        if fast_sent:
            after_fast += len(data)
    conn.close()
    say("recv-bytes", total)
    say("recv-sha256", digest.hexdigest())
    say("bytes-after-fast", after_fast)
    say("max-gap-ms", f"{max_gap * 1000:.0f}", "from", f"{gap_from:.3f}", "to", f"{gap_to:.3f}")
    for gap, begin, end in gaps:
        say("gap-ms", f"{gap * 1000:.0f}", "from", f"{begin:.3f}", "to", f"{end:.3f}")
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
