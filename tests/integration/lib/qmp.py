#!/usr/bin/env python3
"""One QMP command to a QEMU monitor socket, its answer on stdout.

  qmp.py SOCKET COMMAND [ARGUMENTS_JSON]

Connects (the monitor is -qmp unix:SOCKET,server=on,wait=off), leaves the
capabilities negotiation, runs COMMAND with ARGUMENTS_JSON (an object) and
prints its "return" value: a string as it is (human-monitor-command's
text: `qmp.py S human-monitor-command '{"command-line": "info migrate"}'`),
anything else as one line of JSON. Events that arrive meanwhile are
skipped. Exit status 1, with QEMU's error on stderr, when the command
failed; 2 when the monitor did not answer within 10 s.
"""
import json
import socket
import sys


def main():
    path, command = sys.argv[1], sys.argv[2]
    arguments = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect(path)
        stream = sock.makefile("rw")

        def answer():
            # The next line that is not an event (nor the greeting).
            while True:
                line = stream.readline()
                if not line:
                    raise ConnectionError("monitor closed the connection")
                msg = json.loads(line)
                if "return" in msg or "error" in msg:
                    return msg

        greeting = json.loads(stream.readline())
        if "QMP" not in greeting:
            raise ConnectionError(f"not a QMP greeting: {greeting}")
        stream.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
        stream.flush()
        answer()
        request = {"execute": command}
        if arguments:
            request["arguments"] = arguments
        stream.write(json.dumps(request) + "\n")
        stream.flush()
        msg = answer()
    except (OSError, ConnectionError, ValueError) as e:
        print(f"qmp.py: {path}: {command}: {e}", file=sys.stderr)
        return 2
    if "error" in msg:
        print(f"qmp.py: {command}: {msg['error'].get('desc', msg['error'])}", file=sys.stderr)
        return 1
    ret = msg["return"]
    print(ret if isinstance(ret, str) else json.dumps(ret), end="" if isinstance(ret, str) else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
