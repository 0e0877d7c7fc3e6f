#!/usr/bin/env bash
# Issue 51 item 6 on a lent many-core machine, in one call: taihu against the
# machine's own (newest) PyTorch at 1...N threads, with what explains taihu's
# 16-thread step beside it. Runs there; bench/lease_bundle.sh packs its binaries
# here first. Everything is bounded by SECONDS so that the call ends inside the
# lease's 10-minute limit with its files written:
#
#   bash bench/lease_scaling.sh BUNDLE OUT [SECONDS]        (default 540)
#
#  1. the machine: CPU, memory, PyTorch's build;
#  2. the memory-bound layers' grain (core/kernels/parallel.hpp) at the core
#     count: ResNet-50 batch 32 under the old grain (1M floats) and the new
#     (64K), alternating twice; one run under `--conv=measured`, which times
#     oneDNN against im2col + GEMM for every convolution pass there and prints
#     both; then `bench_train --profile` under each grain (per layer: wall
#     time, threads busy, the kernel's share, page faults);
#  3. bench/scaling_cores.sh, one round, thread counts from the most down (a
#     round cut by the deadline loses the one-thread points, not the many-core
#     ones), each side at its best (allocator, layout, BLAS kernel probed).
#
# OUT receives log.txt (everything printed), extra.tgz (phase 2's rows and
# profiles, rewritten after each step) and scaling/ (scaling_cores.sh's files):
# eight files, the most a lent machine sends back.
set -uo pipefail
cd "$(dirname "$0")/.."
unset OPENBLAS_CORETYPE  # taihu under its own kernel choice; PyTorch's is probed (peer_at_its_best.sh)
bundle=${1:?BUNDLE (from bench/lease_bundle.sh)} out=${2:?OUT folder} budget=${3:-540}
py=${PY:-python3}  # the one that holds torch
deadline=$(($(date +%s) + budget))
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1

root=$(mktemp -d /tmp/taihu-lease.XXXX)
extra=$root/extra
mkdir -p "$extra" "$root/build/bench"
tar -C "$root" -xJf "$bundle" || { echo "cannot unpack $bundle"; exit 1; }
# The bundled binaries find their own libraries; PyTorch keeps the machine's.
for binary in "$root"/bin/*; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s "$@"\n' "$root" "$binary" >"$root/build/bench/${binary##*/}"
  chmod +x "$root/build/bench/${binary##*/}"
done
# The allocators become known to the loader, where bench/peer_at_its_best.sh looks for them.
alloc_conf=/etc/ld.so.conf.d/taihu-lease-allocators.conf
if compgen -G "$root/alloc/*.so*" >/dev/null && [[ -w /etc/ld.so.conf.d ]]; then
  echo "$root/alloc" >"$alloc_conf" && ldconfig
fi
cleanup() {
  [[ -f $alloc_conf ]] && rm -f "$alloc_conf" && ldconfig
  rm -rf "$root"
}
trap cleanup EXIT
bench=$root/build/bench
save_extra() { tar -C "$extra" -czf "$out/extra.tgz.part" . && mv "$out/extra.tgz.part" "$out/extra.tgz"; }
left() { echo $((deadline - $(date +%s))); }
bounded() {  # SECONDS COMMAND...: at most SECONDS, and never past the deadline's last minute
  local limit=$1 spare
  shift
  spare=$(($(left) - 60))
  ((spare < limit)) && limit=$spare
  if ((limit < 10)); then echo "skipped, too close to the deadline: $*"; return 0; fi
  timeout "$limit" "$@" || echo "failed or timed out ($?): $*"
}

echo "== 1. machine ($(date -u +%FT%TZ), $(left) s left)"
cores=$(nproc)
{
  echo "cores: $cores"
  lscpu | grep -E '^(Model name|CPU family|Model:|Socket|Core|Thread|NUMA node\(s\)|L2|L3|Flags)' | cut -c1-240
  free -g | head -2
  uname -r
  cat "$root/built_from.txt"
  "$py" -c 'import torch; print("torch", torch.__version__, "threads", torch.get_num_threads()); print(torch.__config__.show())' |
    grep -E '^torch|BLAS_INFO|USE_MKLDNN|USE_OPENMP|CPU capability'
} | tee "$extra/machine.txt"
if LD_LIBRARY_PATH=$root/lib ldd "$root"/bin/* | grep 'not found'; then echo "a bundled binary lacks a library"; exit 1; fi
"$bench/bench_train" --net=config/nets/lenet.ini --batch=64 --iters=20 --warmup=3 --repeats=1 || exit 1

echo "== 2. the memory-bound layers' grain at $cores threads ($(left) s left)"
resnet=(--net=config/nets/resnet50.ini --batch=32 --classes=1000 --threads="$cores" --warmup=1)
grains=(1048576 65536)
for round in 1 2; do
  for grain in "${grains[@]}"; do
    bounded 60 "$bench/bench_train" "${resnet[@]}" --iters=2 --repeats=1 --grain="$grain" --json="$extra/grain.jsonl"
  done
done
bounded 90 "$bench/bench_train" "${resnet[@]}" --iters=2 --repeats=1 --conv=measured --json="$extra/measured.jsonl"
save_extra
for grain in "${grains[@]}"; do
  echo "-- profile, grain $grain" | tee -a "$extra/profiles.txt"
  bounded 60 "$bench/bench_train" "${resnet[@]}" --iters=3 --grain="$grain" --profile | tee -a "$extra/profiles.txt"
done
save_extra

echo "== 3. scaling with threads ($(left) s left)"
threads="" t=1
while ((t < cores)); do threads="$t $threads" t=$((t * 2)); done
PY=$py OUT_DIR=$out/scaling CASE_TIMEOUT=150 DEADLINE=$((deadline - 15)) THREADS_LIST="$cores $threads" \
  bash bench/scaling_cores.sh "$root/build" 1
echo "== done, $(left) s left"
