#!/usr/bin/env bash
# Peak memory, side by side: the resident set's high-water mark (VmHWM, from
# GNU time's %M) of one whole process, taihu against PyTorch on the same work:
#   resnet50-b32  ResNet-50 training steps at batch 32 (bench_train against
#                 bench/pytorch/pytorch_baseline.py: 1 warm-up + 2 timed steps)
#   lenet-job     the default job: LeNet on Fashion-MNIST, 3 epochs
#                 (taihu-train config/lenet-fashion.ini against
#                 bench/pytorch/lenet_fashion_loop.py)
# PyTorch runs twice per round: under the allocator and OpenBLAS kernel it is
# fastest with (bench/peer_at_its_best.sh, probed here on each workload) and
# under glibc's malloc, since an allocator that keeps freed pages buys speed
# with memory and the fair memory figure is not necessarily the fast one.
# taihu runs as shipped (glibc's malloc, its own kernel choice). Rounds
# alternate; peak memory barely varies, the medians are printed with ranges.
#
#   bash bench/peak_memory.sh [BUILD_DIR] [ROUNDS]
#   CASES="lenet-job"   limits the workloads
# Writes bench/results/peak_memory.jsonl (a row per process) and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
cases=${CASES:-resnet50-b32 lenet-job}
cores=$(nproc)
py=/usr/bin/python3
out=bench/results/peak_memory.jsonl
[[ -x /usr/bin/time ]] || { echo "needs GNU time: apt-get install time" >&2; exit 2; }
data=/usr/share/datasets/fashion-mnist
mkdir -p bench/results
: >"$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source bench/peer_at_its_best.sh

peak() {  # case system allocator command...: runs it, appends its peak RSS in MB
  local name=$1 system=$2 allocator=$3
  shift 3
  /usr/bin/time -f '%M' -o "$tmp/kb" "$@" >"$tmp/log" 2>&1 || { echo "$name $system failed:"; tail -5 "$tmp/log"; return 0; }
  local mb
  mb=$(python3 -c "print(round($(cat "$tmp/kb") / 1024, 1))")
  echo "{\"case\": \"$name\", \"system\": \"$system\", \"allocator\": \"$allocator\", \"peak_rss_mb\": $mb}" | tee -a "$out"
}

for name in $cases; do
  case $name in
    resnet50-b32)
      taihu=(env -u OPENBLAS_CORETYPE "$build/bench/bench_train" --net=config/nets/resnet50.ini --batch=32 --classes=1000
             --iters=2 --warmup=1 --repeats=1 --threads="$cores")
      torch=("$py" bench/pytorch/pytorch_baseline.py --model resnet50 --batch 32 --iters 2 --warmup 1 --repeats 1
             --threads "$cores")
      pick_peer_best "${torch[@]}" ;;
    lenet-job)
      [[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "lenet-job: Fashion-MNIST missing (apt-get install dataset-fashion-mnist)"; continue; }
      taihu=(env -u OPENBLAS_CORETYPE "$build/apps/taihu-train" --config-file=config/lenet-fashion.ini epochs=3
             output.dir="$tmp/out" --progress=lines)
      torch=("$py" bench/pytorch/lenet_fashion_loop.py --epochs 3 --threads "$cores")
      pick_peer_best "$py" bench/pytorch/pytorch_baseline.py --model lenet --batch 64 --iters 20 --warmup 5 --repeats 3 \
        --threads "$cores" ;;
    *) echo "unknown case '$name' (resnet50-b32, lenet-job)" >&2; exit 2 ;;
  esac
  glibc_env=(-u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 ${best_coretype:+OPENBLAS_CORETYPE=$best_coretype})
  for ((r = 1; r <= rounds; r++)); do
    peak "$name" taihu glibc "${taihu[@]}"
    peak "$name" pytorch "$best_allocator" env "${torch_env[@]}" "${torch[@]}"
    [[ $best_allocator == glibc ]] || peak "$name" pytorch glibc env "${glibc_env[@]}" "${torch[@]}"
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows:
    groups.setdefault((r["case"], r["system"], r["allocator"]), []).append(r["peak_rss_mb"])
print("| case | system | allocator | peak RSS MB (median) | range | runs |\n|---|---|---|---|---|---|")
for (case, system, allocator), v in groups.items():
    print(f"| {case} | {system} | {allocator} | {statistics.median(v):.0f} | {min(v):.0f}-{max(v):.0f} | {len(v)} |")
PY
