#!/usr/bin/env python3
"""The host's checksummed TCP stream into a guest (guest_init.sh
vnet_stream=1 listens for it), run in the test's network namespace.

  stream_sender.py ADDRESS PORT BYTES DEADLINE_SECONDS

Connects (again while nothing listens yet) and sends BYTES random bytes in
16 KiB chunks, one every 40 ms, until SIGUSR1 arrives; then the rest at
once, and closes. Reports on stdout, one line each (times in seconds since
the epoch):
  connected TIME
  progress TIME BYTES      every 0.5 s
  fast TIME BYTES          SIGUSR1 arrived
  sent-bytes N, sent-sha256 HEX, bytes-after-fast N
  done
Exit status 1 (with an "error ..." line) past DEADLINE_SECONDS.
"""
import hashlib
import os
import signal
import socket
import sys
import time

CHUNK = 16384
PACE = 0.04


def say(*words):
    print(*words, flush=True)


def main():
    address, port, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    deadline = time.time() + float(sys.argv[4])
    fast = []
    signal.signal(signal.SIGUSR1, lambda *_: fast.append(time.time()))
    while True:
        try:
            sock = socket.create_connection((address, port), timeout=2)
            break
        except OSError as e:
            if time.time() > deadline:
                say("error could not connect:", e)
                return 1
            time.sleep(0.5)
    sock.settimeout(max(1.0, deadline - time.time()))
    say("connected", f"{time.time():.3f}")
    digest = hashlib.sha256()
    sent = after_fast = 0
    fast_seen = False
    next_progress = time.time() + 0.5
    try:
        while sent < size:
            now = time.time()
            if now > deadline:
                say("error the stream did not end in time; bytes", sent)
                return 1
            if fast and not fast_seen:
                fast_seen = True
                say("fast", f"{now:.3f}", sent)
            if now >= next_progress:
                say("progress", f"{now:.3f}", sent)
                next_progress = now + 0.5
            chunk = os.urandom(min(CHUNK, size - sent))
            sock.sendall(chunk)
            digest.update(chunk)
            sent += len(chunk)
            if fast_seen:
                after_fast += len(chunk)
            else:
                time.sleep(PACE)
        sock.shutdown(socket.SHUT_WR)
        # The guest closes once it has read everything.
        while sock.recv(4096):
            pass
    except OSError as e:
        say("error", e, "after", sent, "bytes")
        return 1
    sock.close()
    say("sent-bytes", sent)
    say("sent-sha256", digest.hexdigest())
    say("bytes-after-fast", after_fast)
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
