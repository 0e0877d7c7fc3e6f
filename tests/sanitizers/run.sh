#!/usr/bin/env bash
# The sanitizer check (docs/checking.md): builds the whole project with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs every test but the slow-labelled ones on it. CI runs it.
#
#   bash tests/sanitizers/run.sh [BUILD_DIR]     (default build-asan; extra ctest args after it)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-asan}
shift || true
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAIHU_SANITIZE=address,undefined \
  -DTAIHU_BUILD_BENCH=OFF -DTAIHU_NATIVE=OFF \
  -DTAIHU_PYTHON=OFF  # an instrumented module would need the sanitizer runtime preloaded into python3
cmake --build "$build" -j "${JOBS:-$(nproc)}"
# Every report is fatal (halt_on_error) except those tests/sanitizers/*.supp exempt, each of which
# is code that is not ours; a stack for each.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$src/tests/sanitizers/ubsan.supp"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_EXTRA:+:$ASAN_EXTRA}"
cd "$build"
# CTEST_SELECT="-L slow" runs the slow-labelled tests instead.
# shellcheck disable=SC2086  # a list of ctest options
exec ctest --output-on-failure ${CTEST_SELECT:--LE slow} --timeout 1200 "$@"
