#!/usr/bin/env python3
"""Watches a directory while a socket appears in it, and reports what the
socket looked like from the first moment it could be seen.

  watch_socket_access.py DIR NAME... --until FILE

Two observers run together until FILE exists: inotify on DIR (every event
naming one of NAMES, and an lstat made the moment it is read), and an lstat
of every DIR/NAME in a tight loop (racing the daemon's start-up). Prints,
per NAME, one line per distinct look it was seen with:

  NAME seen MODE UID GID
  NAME event MASKNAMES

and "ready" on stderr once both observers run. A socket made with its
permissions in place shows exactly one `seen` line and never IN_ATTRIB.
"""
import ctypes
import os
import stat
import struct
import sys

IN_ATTRIB = 0x004
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
NAMES = {IN_ATTRIB: "IN_ATTRIB", IN_MOVED_FROM: "IN_MOVED_FROM",
         IN_MOVED_TO: "IN_MOVED_TO", IN_CREATE: "IN_CREATE", IN_DELETE: "IN_DELETE"}


def main():
    args = sys.argv[1:]
    until = args[args.index("--until") + 1]
    del args[args.index("--until"):args.index("--until") + 2]
    directory, names = args[0], args[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0 or libc.inotify_add_watch(
            fd, directory.encode(),
            IN_CREATE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE) < 0:
        sys.exit("inotify: " + os.strerror(ctypes.get_errno()))
    seen = {name: [] for name in names}
    events = {name: [] for name in names}

    def look(name):
        try:
            st = os.lstat(os.path.join(directory, name))
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            sys.exit(f"{name} is not a socket")
        entry = (oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid)
        if entry not in seen[name]:
            seen[name].append(entry)

    print("ready", file=sys.stderr, flush=True)
    while not os.path.exists(until):
        for name in names:
            look(name)
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            continue
        offset = 0
        while offset < len(data):
            _, mask, _, length = struct.unpack_from("iIII", data, offset)
            raw = data[offset + 16:offset + 16 + length]
            offset += 16 + length
            name = raw.rstrip(b"\0").decode()
            if name in names:
                look(name)
                events[name] += [v for k, v in NAMES.items() if mask & k]
    for name in names:
        look(name)
        for mode, uid, gid in seen[name]:
            print(f"{name} seen {mode[2:]} {uid} {gid}")
        print(f"{name} event {' '.join(events[name])}")


if __name__ == "__main__":
    main()
