#!/usr/bin/env python3
"""Where one CNI plugin call's wall time goes, from `strace -f -ttt -T`.

Usage: strace_phases.py TRACE...   (each one call, as vnet-cni-attach.sh's
ATTACH_STRACE writes them; prints one markdown row per group of traces with
the same name less its -K suffix: the median of each phase, in ms).

Phases of the traced plugin (its own threads; the processes it starts are
counted whole, from their clone to their exit):
  children  the delegated plugins it runs (host-local: VERSION, ADD/DEL)
  vnetd     time inside syscalls on AF_UNIX sockets (the control socket:
            the time vnetd takes to answer, plus the write)
  netlink   time inside syscalls on AF_NETLINK sockets (rtnetlink does its
            work in the sender's syscall: moving a link, addresses, routes)
  fsync     the state file's fsync
  rest      the remainder: exec and dynamic linking, the runtime's start,
            parsing, everything untraced
"""
import re
import statistics
import sys
from collections import defaultdict

LINE = re.compile(r"^(\d+) +(\d+\.\d+) (.*)$")
CALL = re.compile(r"^(?:<\.\.\. )?(\w+)(?:\(| resumed>)(.*)$")
DURATION = re.compile(r"<(\d+\.\d+)>$")
RESULT = re.compile(r"= (-?\d+)")


def phases(path):
    group = {}  # pid -> root pid of its thread group
    children = {}  # child process root pid -> clone time
    exits = {}  # pid -> exit time
    fd_family = defaultdict(dict)  # group -> fd -> AF_*
    spent = defaultdict(float)
    pending = {}  # pid -> (syscall, arguments) of an <unfinished ...> call
    main = None
    start = end = None
    for raw in open(path):
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, ts, rest = int(m[1]), float(m[2]), m[3]
        if main is None:
            main, start = pid, ts
            group[pid] = pid
        if rest.startswith("+++ exited") or rest.startswith("+++ killed"):
            exits[pid] = ts
            if pid == main:
                end = ts
            continue
        c = CALL.match(rest)
        if not c:
            continue
        name, args = c[1], c[2]
        if rest.endswith("<unfinished ...>"):
            pending[pid] = (name, args)
            continue
        if rest.startswith("<...") and pending.get(pid, ("",))[0] == name:
            args = pending.pop(pid)[1] + args  # the flags and the fd are in the first half
        d = DURATION.search(rest)
        dur = float(d[1]) if d else 0.0
        r = RESULT.search(rest)
        ret = int(r[1]) if r else -1
        root = group.get(pid, pid)
        if name in ("clone", "clone3") and ret > 0:
            if "CLONE_THREAD" in args:
                group[ret] = root
            else:
                group[ret] = ret
                if root == main:
                    children[ret] = ts + dur
            continue
        if root != main:
            continue
        if name == "socket" and ret >= 0:
            fd_family[root][ret] = args.split(",")[0]
            continue
        fd = re.match(r"(\d+),", args)
        family = fd_family[root].get(int(fd[1])) if fd else None
        if name == "fsync":
            spent["fsync"] += dur
        elif family == "AF_UNIX":
            spent["vnetd"] += dur
        elif family == "AF_NETLINK":
            spent["netlink"] += dur
    for child, t0 in children.items():
        spent["children"] += exits.get(child, t0) - t0
    total = (end or start) - start
    spent["total"] = total
    spent["rest"] = total - sum(spent[k] for k in ("children", "vnetd", "netlink", "fsync"))
    spent["nchildren"] = len(children)
    return spent


def main():
    groups = defaultdict(list)
    for path in sys.argv[1:]:
        key = re.sub(r"-\d+\.txt$", "", path.split("/")[-1])
        groups[key].append(phases(path))
    cols = ["total", "children", "vnetd", "netlink", "fsync", "rest"]
    print("| traced call | calls | " + " | ".join(f"{c} ms" for c in cols) + " | children per call |")
    print("|---|--:|" + "--:|" * len(cols) + "--:|")
    for key in sorted(groups):
        rows = groups[key]
        cells = [f"{statistics.median(r[c] for r in rows) * 1000:.2f}" for c in cols]
        kids = statistics.median(r["nchildren"] for r in rows)
        print(f"| {key.removeprefix('strace-')} | {len(rows)} | " + " | ".join(cells) + f" | {kids:g} |")


if __name__ == "__main__":
    main()
