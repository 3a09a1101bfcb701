#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) and runs each for a bounded
# time over a scratch copy of its committed seed corpus. Fails on any finding.
#   scripts/fuzz.sh [seconds-per-target]       build, then run (default 60 s)
#   scripts/fuzz.sh build                      build only
#   scripts/fuzz.sh run [seconds-per-target]   run what was built
# (scripts/test.sh builds beside the release tests and runs beside the ASan
# ones, so the runs do not share the CPUs with a compiler.)
set -euo pipefail
step=all
case "${1:-}" in
build | run)
    step=$1
    shift
    ;;
esac
seconds=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
build=${VNET_FUZZ_BUILD_DIR:-$top/build-fuzz}

if [ "$step" != run ]; then
    cmake -S "$top" -B "$build" -G Ninja -DVNET_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVNET_WERROR=ON \
          -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
          -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
    ninja -C "$build" -j"$(nproc)" vnet_fuzz_targets
fi
if [ "$step" = build ]; then
    exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# fuzz_one BIN: runs one target over a scratch copy of its corpus; its exit
# status goes to $scratch/NAME.rc, its output to $scratch/NAME.log.
fuzz_one() {
    local bin=$1 name corpus rc=0
    name=$(basename "$bin"); name=${name#fuzz_}
    corpus="$scratch/$name"
    mkdir -p "$corpus"
    cp -r "$top/tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null || true
    (cd "$scratch" && "$bin" -max_total_time="$seconds" -print_final_stats=1 \
        -rss_limit_mb=2048 "$corpus" >"$scratch/$name.log" 2>&1) || rc=$?
    echo "$rc" >"$scratch/$name.rc"
}

# Each target is one process on one CPU: as many run at once as there are
# CPUs (scripts/test.sh runs them at the lowest priority beside the ASan
# integration tests, with twice the time).
targets=("$build"/tests/fuzz/fuzz_*)
for bin in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= $(nproc))); do
        wait -n || true
    done
    echo "== fuzz $(basename "$bin") for ${seconds}s"
    fuzz_one "$bin" &
done
wait

status=0
for bin in "${targets[@]}"; do
    name=$(basename "$bin"); name=${name#fuzz_}
    if [ "$(cat "$scratch/$name.rc" 2>/dev/null || echo lost)" != 0 ]; then
        status=1
        tail -n 60 "$scratch/$name.log"
        echo "fuzz $name: FINDING (see above)"
    fi
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$scratch/$name.log" | sed "s/^/$name /"
done
exit $status
