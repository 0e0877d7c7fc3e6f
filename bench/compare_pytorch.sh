#!/usr/bin/env bash
# Side-by-side training throughput: taihu against PyTorch out of the box and
# PyTorch at its best on this machine (OpenBLAS single-threaded, torch's pool
# sized to the cores, and the fastest OpenBLAS kernel the CPU runs: OpenBLAS
# misdetects some CPUs, e.g. Emerald Rapids, and falls back to a slow kernel),
# alternating runs so that machine noise hits all three.
#
#   bash bench/compare_pytorch.sh [BUILD_DIR] [ROUNDS]
# Writes bench/results/compare_pytorch.jsonl and prints the best configuration,
# medians and ratios. MODELS="lenet" limits the nets (default: lenet alexnet
# resnet50 resnet50-b32, the last ResNet-50 at batch 32).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
cores=$(nproc)
out=bench/results/compare_pytorch.jsonl
mkdir -p bench/results
: >"$out"
: >"$out.tuned"  # (stale rows of an earlier run would enter the medians)
: >"$out.default"

# PyTorch's best OpenBLAS kernel here, on LeNet (bench/pytorch_best_coretype.sh).
source bench/pytorch_best_coretype.sh
pick_best_coretype /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model lenet --batch 64 --iters 20 --warmup 5 \
  --repeats 3 --threads "$cores"
tuned_env=("${torch_env[@]}")
echo "PyTorch's threads: torch.set_num_threads($cores)"

run_case() {  # model batch net classes iters warmup
  local model=$1 batch=$2 net=$3 classes=$4 iters=$5 warmup=$6
  for ((r = 0; r < rounds; r++)); do
    # taihu at its best too: its own kernel choice, not one the environment forces
    env -u OPENBLAS_CORETYPE "$build/bench/bench_train" --net="$net" --batch="$batch" --classes="$classes" --iters="$iters" \
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
        line = line.strip()
        if line:
            r = json.loads(line)
            rows.setdefault((r.get(key), r.get("batch")), []).append(r["images_per_second"])
    return rows
taihu = load(base, "net")
tuned = load(base + ".tuned", "model")
default = load(base + ".default", "model")
print(f"{'model':10} {'batch':>5} {'taihu':>10} {'torch best':>11} {'torch default':>14} {'vs best':>8} {'vs default':>11} {'runs':>5}")
for (model, batch) in sorted(tuned):
    if (model, batch) not in taihu:
        continue
    t, b = (statistics.median(x[(model, batch)]) for x in (taihu, tuned))
    d = statistics.median(default[(model, batch)]) if (model, batch) in default else float("nan")
    print(f"{model:10} {batch:5} {t:10.1f} {b:11.1f} {d:14.1f} {t / b:8.2f} {t / d:11.2f} {len(taihu[(model, batch)]):5}")
PY
