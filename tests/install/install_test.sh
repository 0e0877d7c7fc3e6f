#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, then a project outside the tree finds
# taihu there with find_package, builds against its headers and libraries,
# and trains the installed LeNet config; the installed apps answer --version.
#   usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
for app in taihu-train taihu-node taihu-sim taihu-convert; do
  "$prefix/bin/$app" --version | grep -qE "^$app [0-9]+\.[0-9]+\.[0-9]+ " || { echo "FAIL: $app --version"; exit 1; }
done
test -f "$prefix/include/taihu/core/net/net.hpp" || { echo "FAIL: headers not under include/taihu"; exit 1; }
test -f "$prefix/share/taihu/config/nets/lenet.ini" || { echo "FAIL: configs not under share/taihu"; exit 1; }

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; exit 1; }
out=$("$work/consumer/consumer" "$prefix/share/taihu/config/nets/lenet.ini")
echo "$out"
grep -q '^loss ' <<<"$out"
# The Python package, where the build has it: importable from the prefix alone.
if compgen -G "$build/python/taihu/_taihu*.so" >/dev/null; then
  site=$prefix/lib/python3/dist-packages
  test -f "$site/taihu/__init__.py" || { echo "FAIL: the Python package is not under lib/python3/dist-packages"; exit 1; }
  python=$(sed -n 's/^_Python_EXECUTABLE:INTERNAL=//p' "$build/CMakeCache.txt")  # the one it was built for
  (cd "$work" && PYTHONPATH=$site OPENBLAS_NUM_THREADS=1 "${python:-python3}" -c "
import os, sys, numpy as np, taihu
assert os.path.dirname(taihu.__file__).startswith('$site'), taihu.__file__
net = taihu.Net.from_config('$prefix/share/taihu/config/nets/lenet.ini', batch=2)
out = net.forward(data=np.zeros((2, 1, 28, 28), np.float32), label=np.zeros(2, np.float32))
print('python: loss', float(out['loss']))
") || { echo "FAIL: the installed package does not import and run"; exit 1; }
fi
echo "install test passed"
