#!/usr/bin/env bash
# Configures the checking build (docs/checking.md): clang, AddressSanitizer and
# UndefinedBehaviorSanitizer on everything, the Python module included, and the
# libFuzzer targets beside the tests. One instrumented build serves the
# sanitizer suite (tests/sanitizers/run.sh) and the fuzzers (tests/fuzz/run.sh):
# CI builds it once.
#
#   bash tests/sanitizers/configure.sh [BUILD_DIR]     (default build-asan)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-asan}
# Debian's clang and its sanitizer and libFuzzer runtimes, installed where missing.
bash "$src/scripts/install_missing.sh" clang libclang-rt-14-dev
# A build folder configured by another compiler is reconfigured from scratch (CMake cannot switch).
if [[ -f $build/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$build/CMakeCache.txt"; then
  echo "configure.sh: $build was configured with another compiler; configuring it afresh" >&2
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTAIHU_SANITIZE=address,undefined -DTAIHU_FUZZ=ON -DTAIHU_BUILD_BENCH=OFF -DTAIHU_NATIVE=OFF >/dev/null
