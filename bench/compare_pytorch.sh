#!/usr/bin/env bash
# Side-by-side training throughput: taihu against PyTorch at its best on this
# machine and PyTorch out of the box, alternating runs so that machine noise
# hits all three. PyTorch at its best (bench/peer_at_its_best.sh): OpenBLAS
# single-threaded under torch's pool sized to the cores, the fastest OpenBLAS
# kernel the CPU runs (OpenBLAS misdetects some CPUs, e.g. Emerald Rapids, and
# falls back to a slow kernel), and for each net the fastest allocator (glibc,
# tcmalloc, jemalloc: glibc's malloc makes PyTorch pay page faults for every
# large activation each step).
#
#   bash bench/compare_pytorch.sh [BUILD_DIR] [ROUNDS]
# Writes bench/results/compare_pytorch.jsonl (taihu), .tuned and .default
# (PyTorch), .peer (what PyTorch at its best ran under, per net) and prints the
# medians and ranges of the per-round ratios. MODELS="lenet" limits the nets
# (default: lenet alexnet resnet50 resnet50-b32, the last ResNet-50 at batch 32).
# ISA=avx2 holds both sides to AVX2 (an AVX2-only machine's table); OUT=FILE
# writes elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
cores=$(nproc)
out=${OUT:-bench/results/compare_pytorch.jsonl}
mkdir -p "$(dirname "$out")"
: >"$out"
: >"$out.tuned"  # (stale rows of an earlier run would enter the medians)
: >"$out.default"
: >"$out.peer"

# PyTorch's best OpenBLAS kernel here, on LeNet; the allocator again per net below.
source bench/peer_at_its_best.sh
hold_to_isa
pick_peer_best /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model lenet --batch 64 --iters 20 --warmup 5 \
  --repeats 3 --threads "$cores"
echo "PyTorch's threads: torch.set_num_threads($cores)"

run_case() {  # model batch net classes iters warmup
  local model=$1 batch=$2 net=$3 classes=$4 iters=$5 warmup=$6
  pick_peer_allocator /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model "$model" --batch "$batch" \
    --iters "$(((iters + 3) / 4))" --warmup 1 --repeats 1 --threads "$cores"
  local tuned_env=("${torch_env[@]}")
  echo "{\"model\": \"$model\", \"batch\": $batch, \"peer\": \"$peer_choice, torch threads $cores\"}" >>"$out.peer"
  for ((r = 0; r < rounds; r++)); do
    # taihu at its best too: its own kernel choice, not one the environment forces
    env -u OPENBLAS_CORETYPE "$build/bench/bench_train" --net="$net" --kernel="$taihu_kernel" --batch="$batch" --classes="$classes" --iters="$iters" \
      --warmup="$warmup" --repeats=3 --json="$out"
    # A failed or killed PyTorch run is reported and leaves its row out.
    env "${tuned_env[@]}" /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model "$model" --batch "$batch" \
      --iters "$iters" --warmup "$warmup" --repeats 3 --threads "$cores" --json "$out.tuned" ||
      echo "PyTorch at its best: $model batch $batch failed"
    # Out of the box (PYTORCH_DEFAULT=no skips it: at ResNet-50 batch 32 it takes minutes a round).
    if [[ ${PYTORCH_DEFAULT:-yes} != no ]]; then
      /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model "$model" --batch "$batch" \
        --iters "$iters" --warmup "$warmup" --repeats 3 --json "$out.default" ||
        echo "PyTorch out of the box: $model batch $batch failed"
    fi
  done
}

models=${MODELS:-lenet alexnet resnet50 resnet50-b32}
[[ " $models " == *" lenet "* ]] && run_case lenet 64 config/nets/lenet.ini 10 100 10
[[ " $models " == *" alexnet "* ]] && run_case alexnet 16 config/nets/alexnet.ini 1000 5 2
[[ " $models " == *" resnet50 "* ]] && run_case resnet50 8 config/nets/resnet50.ini 1000 4 1
[[ " $models " == *" resnet50-b32 "* ]] && run_case resnet50 32 config/nets/resnet50.ini 1000 2 1

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
base = sys.argv[1]
def load(path, key):
    rows = {}
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            rows.setdefault((r.get(key), r.get("batch")), []).append(r)
    return rows
taihu, tuned, default, peer = (load(base + suffix, key) for suffix, key in
                               (("", "net"), (".tuned", "model"), (".default", "model"), (".peer", "model")))
def ratios(a, b):  # per round: the i-th run of each side ran side by side
    return [x["images_per_second"] / y["images_per_second"] for x, y in zip(a, b)]
def fmt(rs):
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"
print(f"{'model':10} {'batch':>5} {'taihu':>8} {'torch best':>10} {'vs best':>17} {'vs default':>17} {'rounds':>6}  peer")
for key in sorted(tuned):
    if key not in taihu:
        continue
    t = [r["images_per_second"] for r in taihu[key]]
    b = [r["images_per_second"] for r in tuned[key]]
    vs_default = ratios(taihu[key], default.get(key, []))
    print(f"{key[0]:10} {key[1]:5} {statistics.median(t):8.1f} {statistics.median(b):10.1f} "
          f"{fmt(ratios(taihu[key], tuned[key])):>17} {fmt(vs_default):>17} {len(t):6}  "
          f"{peer[key][-1]['peer'] if key in peer else '-'}")
PY
