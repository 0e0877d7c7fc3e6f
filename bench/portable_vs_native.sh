#!/usr/bin/env bash
# Two builds side by side, alternating runs in one session: the portable default
# against a -march=native one (bench/RESULTS.md, "Portable build against
# -march=native"), or any other pair (-fPIC for the Python module: "Position-
# independent code"). Each line names the build by its directory.
#   bench/portable_vs_native.sh NATIVE_BUILD PORTABLE_BUILD [ROUNDS]
# NATIVE_BUILD: e.g. cmake -S . -B build-native -DTAIHU_NATIVE=ON -DTAIHU_BUILD_TESTS=OFF
#               && cmake --build build-native --target bench_train bench_cavs
set -u
native=$1 portable=$2 rounds=${3:-3}
cd "$(dirname "$0")/.."
export OPENBLAS_NUM_THREADS=1
train() {
  "$1/bench/bench_train" --net="config/nets/$2.ini" --batch="$3" --iters="$4" --warmup=2 --repeats=3 --threads=2 \
    2>/dev/null | grep -o '[0-9.]* images/s' | cut -d' ' -f1
}
cavs() {
  "$1/bench/bench_cavs" --model=binary --samples=400 --batch=25 --modes=batched --repeats=3 2>/dev/null |
    grep 'batched:' | awk '{print $2}'
}
for r in $(seq 1 "$rounds"); do
  for build in "$native" "$portable"; do
    name=$(basename "$build")
    echo "round $r $name lenet $(train "$build" lenet 64 40)"
    echo "round $r $name lenet-bn $(train "$build" lenet-bn 64 30)"
    echo "round $r $name alexnet-bn $(train "$build" alexnet-bn 16 3)"
    echo "round $r $name resnet50 $(train "$build" resnet50 8 2)"
    echo "round $r $name treelstm $(cavs "$build")"
  done
done
