#!/usr/bin/env bash
# taihu's two set-up commands, for a fresh Debian 12 machine (run as root or
# as a user with sudo):
#
#   bash scripts/quickstart.sh train   # install what is missing, build Release, train the default config
#   bash scripts/quickstart.sh test    # install what is missing, build, run every test
#   bash scripts/quickstart.sh bench-mpi  # also mpirun; allreduce across 4 processes vs MPI_Allreduce
#                                         (then: bash bench/mpi_transport.sh, the MPI transport)
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores),
# TAIHU_CONFIG (default config/lenet-fashion.ini) for `train`.
set -euo pipefail

cd "$(dirname "$0")/.."
mode=${1:-}
if [[ "$mode" != "train" && "$mode" != "test" && "$mode" != "bench-mpi" ]]; then
  echo "usage: bash scripts/quickstart.sh train|test|bench-mpi" >&2
  exit 2
fi
shift || true

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libasio-dev libcereal-dev libopenblas-dev libspdlog-dev libfmt-dev
  doctest-dev zlib1g-dev libssl-dev dataset-fashion-mnist
  libpmix-dev  # launched ranks meet through the launcher's PMIx store (mpirun, srun --mpi=pmix)
  libopenmpi-dev  # [cluster] transport = mpi: the chunks over Open MPI (InfiniBand, RoCE through UCX)
  python3  # the multi-process cluster test checks JSON reports and timings with it
  openssl  # the cluster test makes certificates as the README shows
  pybind11-dev python3-dev python3-numpy  # `import taihu` (python/), built by default
  # taihu-convert reads Caffe's prototxt and caffemodel files, which are protobuf (interop/caffe/caffe.proto)
  libprotobuf-dev protobuf-compiler
  # [data] source = images and lmdb: JPEG (TurboJPEG API), PNG, Caffe's LMDB databases
  libturbojpeg0-dev libpng-dev liblmdb-dev
  libdnnl-dev  # convolutions: oneDNN's JIT direct kernels (core/kernels/dnnl_convolution.hpp)
)
# Open MPI's mpirun for the cluster test's launcher and MPI-transport cases, and for the
# comparisons with MPI (bench/allreduce_vs_mpi.sh, bench/mpi_transport.sh).
if [[ "$mode" == "test" || "$mode" == "bench-mpi" ]]; then packages+=(openmpi-bin); fi
# The allocators a benchmark's peer (PyTorch, Open MPI) may run fastest under
# (bench/peer_at_its_best.sh): a comparison against a peer on glibc's malloc alone flatters taihu.
if [[ "$mode" == "test" || "$mode" == "bench-mpi" ]]; then packages+=(libtcmalloc-minimal4 libjemalloc2); fi
# The references the tests check taihu against: PyTorch for nets' forward and backward
# (tests/python/test_pytorch.py) and NPZ exports, torchvision's models exported by PyTorch for ONNX
# import (ctest onnx_import), ONNX's checker for ONNX exports (ctest export_python). Each test
# skips where its package is missing.
# ONNX Runtime runs every ONNX export (tests/interop/test_export.py): its npm package ships its CPU
# build inside (--ignore-scripts: the install script only fetches GPU binaries), driven by Node.js.
# `pip install .` into a venv (ctest pip_install): Debian's PEP 517 backend and venv. Headless
# Chromium draws the training dashboard (ctest dashboard).
if [[ "$mode" == "test" ]]; then
  packages+=(python3-torch python3-torchvision python3-onnx nodejs python3-venv python3-setuptools python3-wheel
             chromium)
fi

bash scripts/install_missing.sh "${packages[@]}"

build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
onnxruntime_node=onnxruntime-node@1.31.1
if [[ "$mode" == "test" && ! -d "$build/onnxruntime-node/node_modules/onnxruntime-node" ]]; then
  command -v npm >/dev/null || bash scripts/install_missing.sh npm  # NodeSource's nodejs bundles npm, Debian's not
  npm install --ignore-scripts --no-audit --no-fund --loglevel=error --prefix "$build/onnxruntime-node" \
    "$onnxruntime_node" >/dev/null ||
    echo "quickstart: could not install $onnxruntime_node from the npm registry: the ONNX Runtime checks will skip" >&2
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"

if [[ "$mode" == "bench-mpi" ]]; then
  exec bash bench/allreduce_vs_mpi.sh "$build" "$@"
elif [[ "$mode" == "train" ]]; then
  config=${TAIHU_CONFIG:-config/lenet-fashion.ini}
  exec "$build/apps/taihu-train" --config-file="$config" --report="out/report.json" "$@"
else
  cd "$build"
  exec ctest --output-on-failure --timeout 1200 "$@"
fi
