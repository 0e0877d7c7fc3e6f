#!/usr/bin/env bash
# Scaling with cores, taihu and PyTorch side by side: ResNet-50 training on a
# synthetic ImageNet-sized batch and the Tree-LSTM (E 300, H 150) on the
# SST-like trees, at 1, 2, 4, ... threads up to the machine's cores. The runs
# alternate (taihu, PyTorch, next thread count, ...; then the next round), so
# that a noisy host hits both sides alike; the summary takes medians over
# rounds.
#
#   bash bench/scaling_cores.sh [BUILD_DIR] [ROUNDS]
#
# Environment:
#   THREADS_LIST  thread counts (default: 1 2 4 ... and the core count)
#   MODELS        any of resnet50 treelstm (default: both)
#   PY            the python3 that holds torch (default /usr/bin/python3, Debian's)
#   OUT_DIR       where the rows and the summary go (default bench/results/scaling)
#   RESNET_BATCH  (default 32: a batch of 8 leaves 16 threads half idle on both sides)
#   CASE_TIMEOUT  seconds for one run before it is killed and left out (default 300)
#   DEADLINE      a time (seconds since the epoch) by which every run has ended: a run is cut
#                 there and none starts after it (default none; a lent machine's call has a limit)
#
# One round at 1-16 threads took 8 minutes on a 16-core Emerald Rapids VM (2.1 GHz): about half
# ResNet-50 (its one- and two-thread runs above all) and the rest the Tree-LSTM's 20 short runs.
#
# Each side at its best: taihu under its own kernel choice (never a kernel the
# environment forces) with t compute threads (ResNet-50) or t vertex executors of
# one BLAS thread each (Tree-LSTM, as taihu-train runs it); PyTorch with
# torch.set_num_threads(t), flush-to-zero, ResNet-50 in its faster layout (NCHW or
# channels_last, probed once), its fastest allocator (glibc, tcmalloc or
# jemalloc) and, where its BLAS is OpenBLAS, the fastest OpenBLAS kernel the
# CPU runs, kept single-threaded under torch's pool (bench/peer_at_its_best.sh).
#
# Writes OUT_DIR/{taihu,pytorch}_{resnet50,treelstm}.jsonl (one row per run),
# OUT_DIR/machine.txt and OUT_DIR/summary.md (images/s or trees/s, speed-up over
# one thread, taihu / PyTorch; bench/summarize_scaling.py, which also reads the
# rows of a run that was cut short), printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
cores=$(nproc)
default_threads="" t=1
while ((t < cores)); do default_threads+="$t " t=$((t * 2)); done
threads_list=${THREADS_LIST:-"$default_threads$cores"}
models=${MODELS:-resnet50 treelstm}
for m in $models; do
  [[ $m == resnet50 || $m == treelstm ]] || { echo "MODELS: unknown model '$m' (resnet50, treelstm)" >&2; exit 2; }
done
py=${PY:-/usr/bin/python3}
out=${OUT_DIR:-bench/results/scaling}
resnet_batch=${RESNET_BATCH:-32}
case_timeout=${CASE_TIMEOUT:-300}
mkdir -p "$out"
for f in taihu_resnet50 pytorch_resnet50 taihu_treelstm pytorch_treelstm; do : >"$out/$f.jsonl"; done

{
  echo "date: $(date -u +%FT%TZ)"
  echo "cores: $cores; threads: $threads_list; rounds: $rounds"
  lscpu | grep -E '^(Model name|Socket|Core|Thread|NUMA node\(s\)|L2|L3|Flags)' | cut -c1-200 || true
  $py -c 'import torch; print("torch", torch.__version__); print(torch.__config__.show())' 2>&1 |
    grep -E '^torch|BLAS_INFO|LAPACK_INFO|USE_MKLDNN|USE_OPENMP|CPU capability' || true
} | tee "$out/machine.txt"

wl=$build/workloads
if [[ " $models " == *" treelstm "* && ! -f $wl/sst-like.txt ]]; then
  "$build/bench/make_tree_workload" --out="$wl" --sets=sst-like
fi

# PyTorch's allocator and, where its BLAS is OpenBLAS (Debian's torch reports BLAS_INFO=generic
# and runs on the system's libblas), its OpenBLAS kernel (bench/peer_at_its_best.sh).
source bench/peer_at_its_best.sh
if $py -c 'import torch, sys; sys.exit(0 if "BLAS_INFO=mkl" in torch.__config__.show() else 1)' 2>/dev/null; then
  echo "PyTorch's BLAS is MKL: no OpenBLAS kernel to pick"
  CORETYPE=unset
fi
pick_peer_best "$py" bench/pytorch/pytorch_baseline.py --model lenet --batch 64 --iters 20 --warmup 5 \
  --repeats 3 --threads "$cores"
echo "PyTorch: $peer_choice" >>"$out/machine.txt"

# PyTorch's ResNet-50 in the faster of its two layouts on this machine: channels_last ran
# 1.4-1.5x faster than NCHW on a 16-core Emerald Rapids VM (oneDNN), which need not hold for a
# PyTorch on another BLAS or CPU. Short runs of each at the core count decide.
resnet_layout=()
if [[ " $models " == *" resnet50 "* ]]; then
  layout_rate() {  # [--channels-last]: images/s of one short run at the core count
    timeout "$case_timeout" env "${torch_env[@]}" "$py" bench/pytorch/pytorch_baseline.py --model resnet50 \
      --batch "$resnet_batch" --threads "$cores" --iters 1 --warmup 1 --repeats 1 "$@" 2>/dev/null |
      grep -o '[0-9.]* images/s' | head -1 | cut -d' ' -f1 || true
  }
  # Two alternating rounds, the better of each layout (as peer_at_its_best.sh does).
  nchw=$(layout_rate) nhwc=$(layout_rate --channels-last)
  nchw="$nchw $(layout_rate)" nhwc="$nhwc $(layout_rate --channels-last)"
  nchw=$(echo $nchw | tr ' ' '\n' | sort -g | tail -1) nhwc=$(echo $nhwc | tr ' ' '\n' | sort -g | tail -1)
  if python3 -c "import sys; sys.exit(0 if ${nhwc:-0} > ${nchw:-0} else 1)"; then resnet_layout=(--channels-last); fi
  echo "PyTorch ResNet-50 layout: ${resnet_layout[*]:-NCHW (default)} (probe: NCHW ${nchw:-failed}, channels_last ${nhwc:-failed} images/s)" |
    tee -a "$out/machine.txt"
fi

deadline=${DEADLINE:-0}
run() {  # a run that fails or outlives CASE_TIMEOUT (or DEADLINE) is reported and leaves its row out
  local limit=$case_timeout left
  if ((deadline > 0)); then
    left=$((deadline - $(date +%s)))
    if ((left < 10)); then echo "skipped, DEADLINE reached: $*"; return 0; fi
    ((left < limit)) && limit=$left
  fi
  timeout "$limit" "$@" || echo "failed or timed out ($?): $*"
}

resnet50() {  # threads
  # Below 4 threads one step lasts 6-20 s on either side, long enough to time alone.
  local iters=2
  (($1 < 4)) && iters=1
  run env -u OPENBLAS_CORETYPE "$build/bench/bench_train" --net=config/nets/resnet50.ini --batch="$resnet_batch" \
    --classes=1000 --threads="$1" --iters=$iters --warmup=1 --repeats=1 --json="$out/taihu_resnet50.jsonl"
  run env "${torch_env[@]}" "$py" bench/pytorch/pytorch_baseline.py --model resnet50 --batch "$resnet_batch" \
    --threads "$1" --iters $iters --warmup 1 --repeats 1 "${resnet_layout[@]}" --json "$out/pytorch_resnet50.jsonl"
}

treelstm() {  # threads
  local bs
  for bs in 25 64; do
    run env -u OPENBLAS_CORETYPE "$build/bench/bench_graph_train_actors" --model=tree_lstm --workload="$wl/sst-like.txt" \
      --batch=$bs --executors="$1" --threads=1 --phase=train --mode=batched --embed=300 --hidden=150 \
      --warmup=3 --batches=12 --repeats=1 --system=taihu --json="$out/taihu_treelstm.jsonl"
    run env "${torch_env[@]}" "$py" bench/pytorch/treelstm_baseline.py --workload "$wl/sst-like.txt" --impl p1 \
      --batch $bs --threads "$1" --warmup 3 --batches 12 --repeats 1 --system pytorch --json "$out/pytorch_treelstm.jsonl"
  done
}

for ((r = 1; r <= rounds; r++)); do
  echo "== round $r / $rounds: $(uptime)"
  for t in $threads_list; do
    for m in $models; do "$m" "$t"; done
  done
done

python3 bench/summarize_scaling.py "$out" | tee "$out/summary.md"
