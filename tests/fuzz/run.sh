#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS, from the seed corpora in
# tests/fuzz/corpus/ (new inputs go to BUILD/corpus/, the seeds stay as
# committed). The targets live in the checking build (tests/sanitizers/configure.sh:
# clang, AddressSanitizer and UndefinedBehaviorSanitizer; build-asan/ unless
# FUZZ_BUILD_DIR says otherwise), which this builds as far as they need. Prints
# executions per target; exits 1 if any target crashed, leaked, hung or
# allocated past the limit, with the input in BUILD/crashes/ (turn each into a
# regression test).
#
#   bash tests/fuzz/run.sh SECONDS [TARGET ...]     (every tests/fuzz/fuzz_*.cpp by default)
#   FUZZ_RUNS=1000000 bash tests/fuzz/run.sh 3600 idx   (the long run: stops at a million
#                                                      executions, or at SECONDS)
set -euo pipefail
seconds=${1:?usage: bash tests/fuzz/run.sh SECONDS [TARGET ...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-asan}
targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in "$root"/tests/fuzz/fuzz_*.cpp; do
    name=$(basename "$source" .cpp)
    targets+=("${name#fuzz_}")
  done
fi

bash "$root/tests/sanitizers/configure.sh" "$build"
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}")

mkdir -p "$build/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp}
export OPENBLAS_NUM_THREADS=1
failed=0
printf '| target | executions | seconds | per second | corpus | result |\n|---|---|---|---|---|---|\n'
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  log="$build/fuzz_$t.log"
  rc=0
  seeds=("$root/tests/fuzz/corpus/$t")
  [[ $t == config ]] && seeds+=("$root/config")  # the shipped configs are the parser's real inputs
  "$build/tests/fuzz/fuzz_$t" "$work" "${seeds[@]}" -max_total_time="$seconds" \
    ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$t-" >"$log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  runs=${runs:-0}
  took=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1 | awk '{print $5}' || true)
  took=${took:-$seconds}  # libFuzzer says how long only when it stops at -runs
  rate=$(( runs / (took > 0 ? took : 1) ))
  files=$(find "$work" -type f | wc -l)
  if ((rc == 0)); then result=clean; else result="FOUND (exit $rc, $build/fuzz_$t.log)"; failed=1; fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$t" "$runs" "$took" "$rate" "$files" "$result"
done
exit $failed
