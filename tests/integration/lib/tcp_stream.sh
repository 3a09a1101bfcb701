# A seeded TCP byte stream and its hash, for tests whose frames the
# receiving kernel trusts (a partial checksum on local delivery, a merged
# GSO frame): only the application can tell that every byte arrived right.
# Run in a namespace with `bash -c "$(declare -f stream_receiver); ..."`.
# Sourced after common.sh.
# shellcheck shell=bash

# stream_receiver PORT FAMILY OUT: accept one connection, hash it, write
# "LENGTH SHA256" to OUT.
stream_receiver() {
    python3 - "$@" <<'EOF'
import hashlib, socket, sys
port, family, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fam = socket.AF_INET6 if family == "6" else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", port))
s.listen(1)
s.settimeout(60)
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
open(out, "w").write(f"{n} {h.hexdigest()}\n")
EOF
}

# stream_sender ADDR PORT MIB SEED: send MIB MiB of seeded random bytes;
# print "LENGTH SHA256".
stream_sender() {
    python3 - "$@" <<'EOF'
import hashlib, random, socket, sys, time
addr, port, mib, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
for attempt in range(100):
    try:
        s = socket.create_connection((addr, port), timeout=30)
        break
    except OSError:
        time.sleep(0.1)
else:
    sys.exit("cannot connect")
h, n = hashlib.sha256(), 0
for _ in range(mib * 4):
    # Odd write sizes, so segments are not all aligned to the write size.
    b = rng.randbytes(262144 - rng.randrange(0, 3000))
    s.sendall(b)
    h.update(b)
    n += len(b)
s.shutdown(socket.SHUT_WR)
s.recv(1)
s.close()
print(f"{n} {h.hexdigest()}")
EOF
}
