#!/usr/bin/env bash
# The ThreadSanitizer check (docs/checking.md): builds CAF with ThreadSanitizer
# (build_caf_tsan.sh, into BUILD_DIR/caf-tsan), then the core and the actor test binaries with
# ThreadSanitizer into BUILD_DIR, linked to that CAF, and runs the transport (data plane,
# same-host channels, gatekeeper, TLS relays; Asio is header-only), the collectives and every
# actor test. CAF's scheduler and mailboxes are then instrumented code too, so a message that
# hands a buffer from one actor to another reads as the synchronised hand-off it is.
#
#   bash tests/sanitizers/tsan.sh [BUILD_DIR]     (default build-tsan; extra doctest args after it,
#                                                  given to both binaries)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$src/build-tsan}")
shift || true
caf=$build/caf-tsan
bash "$src/tests/sanitizers/build_caf_tsan.sh" "$caf"
# -U: a CAF found by an earlier configure of this build directory is looked up again, now with
# the instrumented one first on CMAKE_PREFIX_PATH.
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAIHU_SANITIZE=thread \
  -DCMAKE_PREFIX_PATH="$caf" -UCAF_INCLUDE_DIR -UCAF_CORE_LIBRARY -UCAF_IO_LIBRARY \
  -DTAIHU_BUILD_BENCH=OFF -DTAIHU_NATIVE=OFF \
  -DTAIHU_PYTHON=OFF  # an instrumented module would need the sanitizer runtime preloaded into python3
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target taihu_core_tests taihu_actor_tests

# Uninstrumented CAF would make every hand-off between actors a report: refuse to run with it.
for lib in libcaf_core libcaf_io; do
  if ! ldd "$build/tests/taihu_actor_tests" | grep -q "$lib\.so.* => $caf/lib/"; then
    echo "tsan.sh: taihu_actor_tests does not load $caf/lib/$lib.so" >&2
    exit 1
  fi
done

# Every report is fatal. OpenSSL is not instrumented either: each connection's TLS state is used
# by one I/O thread only, so nothing of it is shared behind ThreadSanitizer's back.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
export OPENBLAS_NUM_THREADS=1
# Two tests fork a process that then starts threads, which ThreadSanitizer does not support
# (it ends such a child at once); they run in the normal and the ASan suites.
"$build/tests/taihu_core_tests" -ts=net,transport,collectives,buckets \
  -tce="a sender in another process,a message left in a killed sender's memory*" "$@"
"$build/tests/taihu_actor_tests" "$@"
