#!/usr/bin/env bash
# LeNet on Fashion-MNIST end to end: `taihu-train config/lenet-fashion.ini` (the
# whole run: reading the IDX files, training, the test after every epoch)
# against a plain PyTorch loop on the same files with the same net, batch,
# solver and epochs (bench/pytorch/lenet_fashion_loop.py; its training steps
# only), PyTorch at its best on this machine as bench/compare_pytorch.sh finds
# it. Alternating rounds; medians of training images/s and the accuracies.
#
#   bash bench/compare_lenet_fashion.sh [BUILD_DIR] [ROUNDS] [EPOCHS]
# Writes bench/results/lenet_fashion.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
epochs=${3:-3}
cores=$(nproc)
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "Fashion-MNIST missing: apt-get install dataset-fashion-mnist"; exit 1; }
out=bench/results/lenet_fashion.jsonl
mkdir -p bench/results
: >"$out"
# PyTorch's fastest allocator and OpenBLAS kernel, probed on LeNet as
# compare_pytorch.sh does (ALLOCATOR=NAME, CORETYPE=NAME or CORETYPE=unset skip
# a probe; bench/peer_at_its_best.sh).
source bench/peer_at_its_best.sh
pick_peer_best /usr/bin/python3 bench/pytorch/pytorch_baseline.py --model lenet --batch 64 --iters 20 --warmup 5 \
  --repeats 3 --threads "$cores"
echo "PyTorch's threads: torch.set_num_threads($cores)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
walls=$PWD/$out.wall  # each process's wall time, start to exit, as this script measures it
: >"$walls"
wall() {  # framework command...: runs the command and appends its wall seconds
  local framework=$1 start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  echo "{\"framework\": \"$framework\", \"wall_seconds\": $(python3 -c "print(round($end - $start, 3))")}" >>"$walls"
}
for ((r = 1; r <= rounds; r++)); do
  wall taihu env -u OPENBLAS_CORETYPE "$build/apps/taihu-train" --config-file=config/lenet-fashion.ini epochs="$epochs" \
    output.dir="$tmp/out" --report="$tmp/report.json" >"$tmp/log" 2>&1
  /usr/bin/python3 - "$tmp/report.json" "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
row = {"framework": "taihu", "epochs": r["epochs"], "images_per_second": r["images_per_second"],
       "seconds": r["seconds"], "test_accuracy": r["test_accuracy"], "blas_kernel": r["blas_kernel"]}
print(json.dumps(row))
open(sys.argv[2], "a").write(json.dumps(row) + "\n")
PY
  (cd bench/pytorch && wall pytorch env "${torch_env[@]}" /usr/bin/python3 lenet_fashion_loop.py --epochs "$epochs" \
    --threads "$cores" --json "../../$out")
done
# taihu's images/s: its report's, over its training time (the epochs'
# iterations, data waits included, tests excluded); PyTorch's: over its
# training steps (data loading included, its test excluded). Wall: the
# whole process, start-up, data loading and every test included.
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
walls = [json.loads(l) for l in open(sys.argv[1] + ".wall") if l.strip()]
for fw in ("taihu", "pytorch"):
    rs = [r for r in rows if r["framework"] == fw]
    accuracies = ", ".join("%.4f" % r["test_accuracy"] for r in rs)
    rate = statistics.median(r["images_per_second"] for r in rs)
    whole = statistics.median(w["wall_seconds"] for w in walls if w["framework"] == fw)
    print(f"{fw:8} training images/s median {rate:8.1f}  whole process {whole:6.1f} s  accuracy {accuracies}")
t = statistics.median(r["images_per_second"] for r in rows if r["framework"] == "taihu")
p = statistics.median(r["images_per_second"] for r in rows if r["framework"] == "pytorch")
print(f"taihu / PyTorch: {t / p:.2f}x")
PY
