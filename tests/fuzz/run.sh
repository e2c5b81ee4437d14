#!/bin/sh
# Builds the libFuzzer targets with clang + ASan + UBSan in their own build
# directory and runs each for a bounded time on a copy of the checked-in
# corpus.  Exits non-zero on any crash, leak, UB report or failed check.
#   tests/fuzz/run.sh [SECONDS_PER_TARGET]   (default 30)
# FUZZ_BUILD_DIR overrides the build directory (default build-fuzz).
# FUZZ_SEED sets libFuzzer's seed (default 1, so CI runs are repeatable;
# use FUZZ_SEED=0 for a random one when hunting).
set -eu
secs=${1:-30}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCRAWLER_FUZZ=ON -DCRAWLER_SANITIZE=address -DCRAWLER_BENCH=OFF >/dev/null
cmake --build "$build" --target fuzz_parser fuzz_url -j2

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
status=0
for t in parser url; do
    work=$(mktemp -d)
    mkdir -p "$build/fuzz-artifacts/$t"
    echo "== fuzz_$t for ${secs}s"
    # new inputs go to $work; the checked-in corpus is only read
    if ! "$build/tests/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len=16384 -print_final_stats=1 -seed="${FUZZ_SEED:-1}" \
        -artifact_prefix="$build/fuzz-artifacts/$t/" "$work" "$here/corpus/$t"; then
        echo "fuzz_$t FAILED (artifacts in $build/fuzz-artifacts/$t)" >&2
        status=1
    fi
    rm -rf "$work"
done
exit $status
