#!/usr/bin/env bash
# The test command (README.md): installs what the tests need, builds with
# warnings as errors, runs the unit tests under ASan+UBSan, every fuzz target
# for a bounded time, the integration tests (root: they make their own
# namespaces, taps and peers) against the release build, and the same
# integration tests against the ASan+UBSan build. It prints the time of each
# phase at the end.
#   VNET_FUZZ_SECONDS=60  time per fuzz target
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
    printf '%6d  total\n' $((end - ${phase_starts[0]:-$end}))
}
trap print_phases EXIT

# The test tools and peers (QEMU, DPDK, libvirt, podman...) install while
# the two builds compile: apt waits on the network and the disk, the
# compiler on the CPUs.
phase "install build dependencies"
bash scripts/install-deps.sh --build
test_deps_log=$(mktemp)
bash scripts/install-deps.sh >"$test_deps_log" 2>&1 &
test_deps_pid=$!

# The release build leaves the unit tests out: they run under ASan+UBSan,
# which checks everything a release run of them would and more.
phase "build (release, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVNET_WERROR=ON -DVNET_UNIT_TESTS=OFF \
      "${lines_only[@]}" >/dev/null
ninja -C build -j"$jobs"

phase "build (ASan+UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVNET_SANITIZE=ON -DVNET_BENCH=OFF -DVNET_WERROR=ON "${lines_only[@]}" >/dev/null
ninja -C build-asan -j"$jobs"

phase "install test dependencies (the rest of it)"
if ! wait "$test_deps_pid"; then
    cat "$test_deps_log"
    echo "test.sh: installing the test dependencies failed" >&2
    exit 1
fi
cat "$test_deps_log"

phase "unit tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1 ./build-asan/tests/vnet_unit_tests --gtest_brief=1

phase "fuzz (${VNET_FUZZ_SECONDS:-60}s per target)"
bash scripts/fuzz.sh "${VNET_FUZZ_SECONDS:-60}"

# Two at a time: tests/integration/CMakeLists.txt gives the ones that need
# the machine (a TCG guest, testpmd, a CPU or time measurement) to
# themselves.
phase "integration tests"
(cd build && ctest --output-on-failure --timeout 900 -j2)

# The same integration scripts against the sanitized binaries: ASan exits
# non-zero and UBSan aborts (-fno-sanitize-recover), and every script checks
# how vnetd exited, so a finding fails the test. vnet-bench and its smoke test
# are not built there (VNET_BENCH=OFF): they measure speed, which a Debug+ASan
# build does not have.
phase "integration tests under ASan+UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 \
    ctest --output-on-failure --timeout 900 -L integration -j2)
