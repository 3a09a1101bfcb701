#!/usr/bin/env bash
# The test command (README.md): installs what the tests need, builds with
# warnings as errors, runs every fuzz target for a bounded time, the
# integration tests (root: they make their own namespaces, taps and peers)
# against the release build, and the unit tests and the same integration
# tests against the ASan+UBSan build. It prints the time of each
# phase at the end.
#   VNET_FUZZ_SECONDS=120  time per fuzz target (beside the ASan integration tests)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)
# Line tables (-g1) are all a failure's backtrace and a profile need; full
# debug info made a quarter of CI's compile time.
lines_only=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
            -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1)

# phase NAME: starts timing NAME (and ends the phase before it); the times
# are printed at the end, and on the way out of a failed run too.
phase_names=()
phase_starts=()
phase() {
    phase_names+=("$1")
    phase_starts+=("$(date +%s)")
    echo "== $1"
}
print_phases() {
    local end i next
    end=$(date +%s)
    echo "== time per phase (s)"
    for i in "${!phase_names[@]}"; do
        next=${phase_starts[$((i + 1))]:-$end}
        printf '%6d  %s\n' $((next - phase_starts[i])) "${phase_names[$i]}"
    done
    for i in "${beside_times[@]}"; do
        printf '%8s\n' "$i"
    done
    printf '%6d  total\n' $((end - ${phase_starts[0]:-$end}))
}
declare -A beside_pid=() beside_log=()
beside_times=()
# On the way out (a failed phase), what still runs beside goes too.
stop_beside() {
    local pid
    for pid in "${beside_pid[@]}"; do
        kill -- "-$pid" 2>/dev/null || true
    done
}
trap 'stop_beside; print_phases' EXIT

# beside NAME CMD...: runs CMD in the background at the lowest CPU priority
# (nice 19, and in a session of its own whose scheduler autogroup gets nice
# 19 too, so it yields to the foreground whether autogroups are on or off);
# wait_beside NAME waits for it, prints its output and fails the run if it
# failed. Its time is printed with the phases.
beside() {
    local name=$1
    shift
    beside_log[$name]=$(mktemp)
    setsid nice -n 19 bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null || true
        start=$(date +%s); rc=0; "$@" || rc=$?
        echo "$rc $(($(date +%s) - start))" >"$0.status"; exit "$rc"' \
        "${beside_log[$name]}" "$@" >"${beside_log[$name]}" 2>&1 &
    beside_pid[$name]=$!
    echo "== $name: started beside what follows"
}
wait_beside() {
    local name=$1 rc=0 status
    wait "${beside_pid[$name]}" || rc=$?
    cat "${beside_log[$name]}"
    status=$(cat "${beside_log[$name]}.status" 2>/dev/null || echo "$rc ?")
    beside_times+=("${status#* } s  $name (beside)")
    if [ "$rc" != 0 ]; then
        echo "test.sh: $name failed" >&2
        exit 1
    fi
}

# The test tools and peers (QEMU, DPDK, libvirt, podman...) install while
# the release build compiles: apt waits on the network and the disk, the
# compiler on the CPUs.
phase "install build dependencies"
bash scripts/install-deps.sh --build
test_deps_log=$(mktemp)
bash scripts/install-deps.sh >"$test_deps_log" 2>&1 &
test_deps_pid=$!

# The release build is the Debian packages' build: debian/rules configures
# build/ with warnings as errors, line tables only and without the unit
# tests (they run under ASan+UBSan, which checks everything a release run
# of them would and more), so the integration tests run against build/ and
# the package tests get the .deb files, in build/deb, from one compile.
phase "build (release, -Werror) and the Debian packages"
deb_log=$(mktemp)
dpkg-buildpackage -us -uc -b -j"$jobs" >"$deb_log" 2>&1 || {
    tail -n 60 "$deb_log"
    echo "test.sh: dpkg-buildpackage failed (its log: $deb_log)" >&2
    exit 1
}
grep -E '^dpkg-(deb|buildpackage): ' "$deb_log"
# dpkg-buildpackage writes them beside the source tree.
mkdir -p build/deb
for f in ../vnetd{,-cni}{,-dbgsym}_*.{deb,ddeb} ../vnetd_*.{buildinfo,changes}; do
    if [ -e "$f" ]; then mv "$f" build/deb/; fi
done

phase "install test dependencies (the rest of it)"
if ! wait "$test_deps_pid"; then
    cat "$test_deps_log"
    echo "test.sh: installing the test dependencies failed" >&2
    exit 1
fi
cat "$test_deps_log"

# The integration tests mostly wait (paced streams, a guest's fixed-length
# iperf3 runs, timers): they leave more than a CPU idle. The ASan+UBSan
# build and then the fuzz targets' build use it, at the lowest CPU priority
# so the tests keep the CPUs they ask for; the fuzz targets run beside the
# ASan tests below, each with twice the time it had alone. (Run beside the
# release tests with the ASan build competing, they executed about half of
# what they did alone.)
beside "build (ASan+UBSan, then the fuzz targets)" \
    bash -c 'cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVNET_SANITIZE=ON \
                 -DVNET_BENCH=OFF -DVNET_WERROR=ON "$@" >/dev/null && ninja -C build-asan -j"$(nproc)" &&
             bash scripts/fuzz.sh build' \
    asan "${lines_only[@]}"

# Two at a time: tests/integration/CMakeLists.txt gives the ones that need
# the machine (testpmd, a CPU or time measurement) to themselves and runs one
# booted guest at a time.
phase "integration tests"
(cd build && ctest --output-on-failure --timeout 900 -j2)

phase "wait for the ASan+UBSan and fuzz builds"
wait_beside "build (ASan+UBSan, then the fuzz targets)"
beside "fuzz (${VNET_FUZZ_SECONDS:-120}s per target)" bash scripts/fuzz.sh run "${VNET_FUZZ_SECONDS:-120}"

# The same integration scripts against the sanitized binaries: ASan exits
# non-zero and UBSan aborts (-fno-sanitize-recover), and every script checks
# how vnetd exited, so a finding fails the test. vnet-bench and its smoke test
# are not built there (VNET_BENCH=OFF): they measure speed, which a Debug+ASan
# build does not have.
# The unit tests run here too, as one test (unit_suite) in a lane of their
# own beside the integration scripts.
phase "unit and integration tests under ASan+UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 \
    ctest --output-on-failure --timeout 900 -L '^(integration|unit_suite)$' -j2)

phase "wait for the fuzz targets"
wait_beside "fuzz (${VNET_FUZZ_SECONDS:-120}s per target)"
