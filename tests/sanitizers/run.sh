#!/usr/bin/env bash
# The sanitizer check (docs/checking.md): builds the checking build (configure.sh: clang,
# AddressSanitizer and UndefinedBehaviorSanitizer on everything, the Python module and the fuzz
# targets included) and runs the whole suite on it, the slow-labelled tests included. CI runs it.
# multihost_slow is left to its own command (docs/multihost.md) here as in CI's first stage.
# Tests run JOBS at a time (default: one per core); those that check timeouts and signals run
# alone (RUN_SERIAL, tests/CMakeLists.txt says which and why).
#
#   bash tests/sanitizers/run.sh [BUILD_DIR]     (default build-asan; extra ctest args after it)
#   CTEST_SELECT="-R ^core$" bash tests/sanitizers/run.sh     (some tests only)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-asan}
shift || true
bash "$src/tests/sanitizers/configure.sh" "$build"
cmake --build "$build" -j "${JOBS:-$(nproc)}"
# Every report is fatal (halt_on_error) except those tests/sanitizers/*.supp exempt, each of which
# is code that is not ours; a stack for each.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$src/tests/sanitizers/ubsan.supp"
# Leaks in libraries that are not ours (lsan.supp: Open MPI, PMIx and hwloc; CAF's BASP broker at
# shutdown), each with its reason there.
export LSAN_OPTIONS="suppressions=$src/tests/sanitizers/lsan.supp${LSAN_EXTRA:+:$LSAN_EXTRA}"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_EXTRA:+:$ASAN_EXTRA}"
cd "$build"
# shellcheck disable=SC2086  # a list of ctest options
exec ctest --output-on-failure -j "${JOBS:-$(nproc)}" ${CTEST_SELECT:--E ^multihost_slow$} --timeout 1800 "$@"
