#!/usr/bin/env bash
# The test command (README.md): installs what the tests need, builds with
# warnings as errors, runs the unit and integration tests (root: they make
# their own namespaces, taps and peers), then everything again under
# ASan+UBSan (unit tests and the integration tests against the sanitized
# vnetd, vnet-pktgen and vnetctl), and every fuzz target for a bounded time.
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

phase "install dependencies"
bash scripts/install-deps.sh

phase "build (release, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVNET_WERROR=ON "${lines_only[@]}" >/dev/null
ninja -C build -j"$jobs"

phase "build (ASan+UBSan)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVNET_SANITIZE=ON -DVNET_BENCH=OFF -DVNET_WERROR=ON "${lines_only[@]}" >/dev/null
ninja -C build-asan -j"$jobs"

phase "unit tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1 ./build-asan/tests/vnet_unit_tests --gtest_brief=1

phase "fuzz (${VNET_FUZZ_SECONDS:-60}s per target)"
bash scripts/fuzz.sh "${VNET_FUZZ_SECONDS:-60}"

phase "unit and integration tests"
(cd build && ctest --output-on-failure --timeout 900)

# The same integration scripts against the sanitized binaries: ASan exits
# non-zero and UBSan aborts (-fno-sanitize-recover), and every script checks
# how vnetd exited, so a finding fails the test. vnet-bench and its smoke test
# are not built there (VNET_BENCH=OFF): they measure speed, which a Debug+ASan
# build does not have.
phase "integration tests under ASan+UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 \
    ctest --output-on-failure --timeout 900 -L integration)
