#!/usr/bin/env python3
"""systemd's side of sd_notify(3) for a test: a unix datagram socket that
prints every message it receives, one line each (newlines as '|').

  notify_listener.py SOCKET [--check-socket PATH]

With --check-socket, a message holding READY=1 is followed by a line
"ready-check PATH listening" or "ready-check PATH not-listening": whether
PATH accepted a connection at the moment READY=1 arrived. Prints "ready"
on stderr once bound; runs until SIGTERM.
"""
import signal
import socket
import sys


def listening(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    path = sys.argv[1]
    check = sys.argv[sys.argv.index("--check-socket") + 1] if "--check-socket" in sys.argv else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    print("ready", file=sys.stderr, flush=True)
    while True:
        message = sock.recv(4096).decode()
        print(message.strip("\n").replace("\n", "|"), flush=True)
        if check and "READY=1" in message.split("\n"):
            state = "listening" if listening(check) else "not-listening"
            print(f"ready-check {check} {state}", flush=True)


if __name__ == "__main__":
    main()
