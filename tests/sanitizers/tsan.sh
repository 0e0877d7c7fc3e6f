#!/usr/bin/env bash
# The ThreadSanitizer check (docs/checking.md): builds the core test binary with ThreadSanitizer
# into build-tsan and runs the suites whose threads are all instrumented code: the transport
# (data plane, same-host channels, gatekeeper, TLS relays; Asio is header-only) and the
# collectives. The actor tests are not among them: CAF's scheduler and mailboxes live in
# Debian's libcaf_core.so, which is not instrumented, so every message that hands a buffer from
# one actor to another would read as a race.
#
#   bash tests/sanitizers/tsan.sh [BUILD_DIR]     (default build-tsan; extra doctest args after it)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-tsan}
shift || true
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAIHU_SANITIZE=thread \
  -DTAIHU_BUILD_BENCH=OFF -DTAIHU_NATIVE=OFF \
  -DTAIHU_PYTHON=OFF  # an instrumented module would need the sanitizer runtime preloaded into python3
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target taihu_core_tests
# Every report is fatal. OpenSSL is not instrumented either: each connection's TLS state is used
# by one I/O thread only, so nothing of it is shared behind ThreadSanitizer's back.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4"
export OPENBLAS_NUM_THREADS=1
# Two tests fork a process that then starts threads, which ThreadSanitizer does not support
# (it ends such a child at once); they run in the normal and the ASan suites.
exec "$build/tests/taihu_core_tests" -ts=net,transport,collectives,buckets \
  -tce="a sender in another process,a message left in a killed sender's memory*" "$@"
