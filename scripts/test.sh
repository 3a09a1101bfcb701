#!/usr/bin/env bash
# The test command (README.md): installs what the tests need, builds with
# warnings as errors, runs the unit and integration tests (root: they make
# their own namespaces, taps and peers), the unit tests again under
# ASan+UBSan, and every fuzz target for a bounded time.
#   VNET_FUZZ_SECONDS=60  time per fuzz target
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc)

bash scripts/install-deps.sh

echo "== build (release, -Werror)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVNET_WERROR=ON >/dev/null
ninja -C build -j"$jobs"

echo "== build (ASan+UBSan unit tests)"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DVNET_SANITIZE=ON -DVNET_WERROR=ON >/dev/null
ninja -C build-asan -j"$jobs" vnet_unit_tests

echo "== unit tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1 ./build-asan/tests/vnet_unit_tests --gtest_brief=1

echo "== fuzz (${VNET_FUZZ_SECONDS:-60}s per target)"
bash scripts/fuzz.sh "${VNET_FUZZ_SECONDS:-60}"

echo "== unit and integration tests"
cd build
ctest --output-on-failure --timeout 900
