#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + ASan + UBSan) in
# build-fuzz/ and runs each for SECONDS, from the seed corpora in
# tests/fuzz/corpus/ (new inputs go to build-fuzz/corpus/, the seeds stay as
# committed). Prints executions per target; exits 1 if any target crashed,
# leaked, hung or allocated past the limit, with the input in
# build-fuzz/crashes/ (turn each into a regression test).
#
#   bash tests/fuzz/run.sh SECONDS [TARGET ...]
set -euo pipefail
seconds=${1:?usage: bash tests/fuzz/run.sh SECONDS [TARGET ...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
targets=("$@")
((${#targets[@]})) || targets=(config net idx cifar bracket_tree ptb checkpoint data_plane gatekeeper status_request)

command -v clang++ >/dev/null || { echo "run.sh: needs clang (apt-get install clang)" >&2; exit 2; }
CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAIHU_FUZZ=ON \
  -DTAIHU_BUILD_TESTS=OFF -DTAIHU_BUILD_BENCH=OFF -DTAIHU_NATIVE=OFF >/dev/null
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}")

mkdir -p "$build/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OPENBLAS_NUM_THREADS=1
failed=0
printf '| target | executions | per second | corpus | result |\n|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  log="$build/fuzz_$t.log"
  rc=0
  seeds=("$root/tests/fuzz/corpus/$t")
  [[ $t == config ]] && seeds+=("$root/config")  # the shipped configs are the parser's real inputs
  "$build/tests/fuzz/fuzz_$t" "$work" "${seeds[@]}" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" >"$log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  runs=${runs:-0}
  rate=$(( runs / (seconds > 0 ? seconds : 1) ))
  files=$(find "$work" -type f | wc -l)
  if ((rc == 0)); then result=clean; else result="FOUND (exit $rc, $build/fuzz_$t.log)"; failed=1; fi
  printf '| %s | %s | %s | %s | %s |\n' "$t" "$runs" "$rate" "$files" "$result"
done
exit $failed
