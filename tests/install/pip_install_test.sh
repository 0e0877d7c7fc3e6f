#!/usr/bin/env bash
# `pip install .` from the checkout into a fresh virtual environment (ctest pip_install), as the
# README shows it: Debian's setuptools as the build backend, offline (--no-index), no build
# isolation, the CMake build folder under test reused (TAIHU_BUILD_DIR) so that nothing is
# compiled twice. Then, from another folder, the venv's taihu is the installed one and
# `python -m taihu train` trains; bad input exits 2.
# Skipped (77) without python3-venv, setuptools or wheel.
#   usage: pip_install_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
py=/usr/bin/python3
if ! $py -c "import ensurepip, setuptools, wheel" 2>/dev/null; then
  echo "python3-venv, python3-setuptools or python3-wheel is missing: skipped"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$src/tests/cli/expect.sh"

$py -m venv --system-site-packages "$work/venv" || exit 1
venv_py="$work/venv/bin/python"
expect "pip install . (offline, no build isolation)" 0 "Successfully installed taihu-" -- \
  env TAIHU_BUILD_DIR="$build" "$work/venv/bin/pip" install --no-build-isolation --no-index "$src"
cd "$work" || exit 1
expect "the venv imports the installed package" 0 "^$work/venv/lib/python3[.0-9]*/site-packages/taihu/__init__.py" -- \
  "$venv_py" -c "import taihu; print(taihu.__file__)"
expect "with its C++ side" 0 "import_onnx" -- "$venv_py" -c "import taihu; print(taihu.import_onnx.__doc__)"
# A config of its own: synthetic images, so that the test needs no data set.
cat >"$work/tiny.ini" <<INI
net = $src/config/nets/lenet.ini
epochs = 1
batch_size = 8
test_batch_size = 8
[data]
source = synthetic
shape = 1 28 28
classes = 10
train_size = 32
test_size = 16
[solver]
type = sgd
base_lr = 0.01
[output]
dir = $work/out
INI
expect "python -m taihu train" 0 "taihu: done \(iterations 4, train_loss [0-9.]+" -- \
  "$venv_py" -m taihu train "$work/tiny.ini" solver.momentum=0.9 --progress=quiet --report="$work/report.json"
expect "and its report" 0 "\"iterations\": 4" -- cat "$work/report.json"
expect "a bad override exits 2" 2 "taihu: .*base_rate.*unknown option" -- \
  "$venv_py" -m taihu train "$work/tiny.ini" solver.base_rate=1 --progress=quiet
expect "no command: usage, exit 2" 2 "usage: python3 -m taihu" -- "$venv_py" -m taihu
echo "pip install: $passed passed, $failed failed"
((failed == 0))
