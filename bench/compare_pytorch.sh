#!/usr/bin/env bash
# Side-by-side training throughput: taihu against PyTorch out of the box and
# PyTorch at its best on this machine (OpenBLAS single-threaded, torch's pool
# sized to the cores), alternating runs so that machine noise hits all three.
#
#   bash bench/compare_pytorch.sh [BUILD_DIR] [ROUNDS]
# Writes bench/results/compare_pytorch.jsonl and prints medians and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
cores=$(nproc)
out=bench/results/compare_pytorch.jsonl
mkdir -p bench/results
: >"$out"

run_case() {  # model batch net classes iters warmup
  local model=$1 batch=$2 net=$3 classes=$4 iters=$5 warmup=$6
  for ((r = 0; r < rounds; r++)); do
    "$build/bench/bench_train" --net="$net" --batch="$batch" --classes="$classes" --iters="$iters" \
      --warmup="$warmup" --repeats=3 --json="$out"
    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model "$model" --batch "$batch" \
      --iters "$iters" --warmup "$warmup" --repeats 3 --threads "$cores" --json "$out.tuned"
    /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model "$model" --batch "$batch" \
      --iters "$iters" --warmup "$warmup" --repeats 3 --json "$out.default"
  done
}

run_case lenet 64 config/nets/lenet.ini 10 100 10
run_case resnet50 8 config/nets/resnet50.ini 1000 4 1

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
base = sys.argv[1]
def load(path, key):
    rows = {}
    for line in open(path):
        line = line.strip()
        if line:
            r = json.loads(line)
            rows.setdefault(r.get(key), []).append(r["images_per_second"])
    return rows
taihu = load(base, "net")
tuned = load(base + ".tuned", "model")
default = load(base + ".default", "model")
print(f"{'model':10} {'taihu':>10} {'torch best':>11} {'torch default':>14} {'vs best':>8} {'vs default':>11}")
for model, net in (("lenet", "lenet"), ("resnet50", "resnet50")):
    if net not in taihu or model not in tuned:
        continue
    t, b, d = (statistics.median(x) for x in (taihu[net], tuned[model], default[model]))
    print(f"{model:10} {t:10.1f} {b:11.1f} {d:14.1f} {t / b:8.2f} {t / d:11.2f}")
PY
