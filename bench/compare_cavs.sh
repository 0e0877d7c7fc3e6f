#!/usr/bin/env bash
# Cavs benchmarks, side by side: the PyTorch baselines (bench/pytorch/) and,
# once they exist, taihu's Cavs binaries, on the same workload files, runs
# alternating so that machine noise hits every system alike.
#
#   bash bench/compare_cavs.sh [BUILD_DIR] [ROUNDS] [PART...]
#     PART: tree (Tree-LSTM matrix), lm (LSTM/GRU language models), quick (the
#           headline configurations only, for a busy machine); default tree lm
#
# Writes one JSON object per run to bench/results/cavs/<system>_<model>.jsonl
# (CSV rows next to them; OUT=DIR writes elsewhere, and rows already there
# enter the medians) and prints medians over rounds per configuration into
# summary.json there, and taihu / PyTorch per round. ISA=avx2 holds both sides
# to AVX2 (bench/peer_at_its_best.sh). Workloads are written once into
# BUILD_DIR/workloads by make_tree_workload (never into the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
parts=${*:-tree lm}
threads_list=${THREADS_LIST:-"1 $(nproc)"}
py=/usr/bin/python3   # Debian's python3-torch; another python3 on PATH may lack torch
out=${OUT:-bench/results/cavs}
wl=$build/workloads
mkdir -p "$out"

if [[ ! -f $wl/sst-like.txt ]]; then
  "$build/bench/make_tree_workload" --out="$wl"
fi
echo "# $(date -u +%FT%TZ) $(uptime)" | tee -a "$out/load.log"
# PyTorch at its best here (bench/peer_at_its_best.sh): its fastest allocator
# and OpenBLAS kernel, probed on the Tree-LSTM at batch 25, and the allocator
# probed again on the language model, whose activations are larger (the
# baseline scripts themselves default to SkylakeX on AVX-512 CPUs where no
# kernel is forced). taihu runs under its own kernel choice, as taihu-train
# does (OpenBLAS's own detection misdetects some Xeons), never under a kernel
# the environment forces.
source bench/peer_at_its_best.sh
hold_to_isa
pick_peer_best $py bench/pytorch/treelstm_baseline.py --workload "$wl/sst-like.txt" --impl p1 --batch 25 \
  --threads "$(nproc)" --warmup 2 --batches 10 --repeats 1
tree_env=("${torch_env[@]}")
echo "PyTorch Tree-LSTM: $peer_choice" | tee -a "$out/load.log"
lm_env=("${torch_env[@]}")
if [[ " $parts " == *" lm "* || " $parts " == *" quick "* ]]; then
  pick_peer_allocator $py bench/pytorch/lstm_lm_baseline.py --lengths fixed --bptt 35 --threads "$(nproc)" \
    --warmup 1 --steps 2
  lm_env=("${torch_env[@]}")
  echo "PyTorch language model: $peer_choice" | tee -a "$out/load.log"
fi

tree_lstm() {  # extra arguments go to treelstm_baseline.py; --untuned runs in the caller's environment
  local tuning=("${tree_env[@]}")
  [[ " $* " == *" --untuned "* ]] && tuning=()
  env "${tuning[@]}" $py bench/pytorch/treelstm_baseline.py --json "$out/pytorch_treelstm.jsonl" --csv "$out/pytorch_treelstm.csv" "$@"
}

taihu_tree_lstm() {  # workload batch threads mode(train|infer) serial|batched
  # taihu's binary Tree-LSTM through the graph actor runtime: `threads` vertex
  # executors with one BLAS thread each (taihu-train's default).
  local bin=$build/bench/bench_graph_train_actors
  [[ -x $bin ]] || return 0
  env -u OPENBLAS_CORETYPE "$bin" --kernel="$taihu_kernel" --model=tree_lstm --workload="$1" --batch="$2" --executors="$3" --threads=1 --phase="$4" --mode="$5" \
    --embed=300 --hidden=150 --system="taihu-$5" --json="$out/taihu_treelstm.jsonl" --csv="$out/taihu_treelstm.csv"
}

lm() {
  env "${lm_env[@]}" $py bench/pytorch/lstm_lm_baseline.py --json "$out/pytorch_lm.jsonl" --csv "$out/pytorch_lm.csv" "$@"
}

taihu_lm() {  # workload-or-fixedN threads cell
  # taihu's LSTM/GRU language model: `threads` vertex executors x 1 BLAS thread.
  local bin=$build/bench/bench_graph_train_actors
  [[ -x $bin ]] || return 0
  local source=$1 chunk=0
  if [[ $source == fixed* ]]; then chunk=${source#fixed}; source=$wl/ptb-valid.txt; fi
  env -u OPENBLAS_CORETYPE "$bin" --kernel="$taihu_kernel" --model="$3" --workload="$source" --chunk="$chunk" --batch=64 --embed=512 --hidden=512 --executors="$2" \
    --threads=1 --warmup=2 --batches=4 --lr=1.0 --system="taihu-$3" --json="$out/taihu_lm.jsonl" --csv="$out/taihu_lm.csv"
}

for ((r = 0; r < rounds; r++)); do
  echo "== round $((r + 1)) / $rounds: $(uptime)" | tee -a "$out/load.log"
  if [[ " $parts " == *" tree "* ]]; then
    for t in $threads_list; do
      for bs in 25 64; do
        for mode in train infer; do
          tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch $bs --threads $t --mode $mode
          taihu_tree_lstm "$wl/sst-like.txt" $bs $t $mode batched
          taihu_tree_lstm "$wl/sst-like.txt" $bs $t $mode serial
        done
      done
      tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch 25 --threads $t --sparse-embedding \
        --system pytorch-p1-sparse-emb
      # Node by node is slow: fewer batches, and batch 25 only (cavs.md §8.3.7).
      tree_lstm --workload "$wl/sst-like.txt" --impl p0 --batch 25 --threads $t --warmup 2 --batches 8
      tree_lstm --workload "$wl/sst-like.txt" --impl p0 --batch 25 --threads $t --warmup 2 --batches 8 --mode infer
      if [[ -f $wl/sst-train.txt ]]; then
        for bs in 25 64; do
          tree_lstm --workload "$wl/sst-train.txt" --impl p1 --batch $bs --threads $t
          taihu_tree_lstm "$wl/sst-train.txt" $bs $t train batched
        done
      fi
    done
    # Out of the box: no OpenBLAS settings, torch's default threads, no flush-to-zero.
    tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch 25 --untuned
    tree_lstm --workload "$wl/sst-like.txt" --impl p0 --batch 25 --untuned --warmup 2 --batches 8
  fi
  if [[ " $parts " == *" quick "* ]]; then
    for t in $threads_list; do
      for bs in 25 64; do
        tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch $bs --threads $t
        taihu_tree_lstm "$wl/sst-like.txt" $bs $t train batched
      done
    done
    tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch 25 --threads "$(nproc)" --mode infer
    tree_lstm --workload "$wl/sst-like.txt" --impl p0 --batch 25 --threads 1 --warmup 1 --batches 5
    taihu_tree_lstm "$wl/sst-like.txt" 25 1 train serial
    tree_lstm --workload "$wl/sst-like.txt" --impl p1 --batch 25 --untuned
    for t in $threads_list; do
      lm --lengths fixed --bptt 35 --threads $t --warmup 1 --steps 3
      taihu_lm fixed35 $t lstm
    done
    lm --lengths variable --workload "$wl/ptb-valid.txt" --threads "$(nproc)" --warmup 1 --steps 3
    taihu_lm "$wl/ptb-valid.txt" "$(nproc)" lstm
  fi
  if [[ " $parts " == *" lm "* ]]; then
    t=$(nproc)
    lm --lengths fixed --bptt 35 --threads $t --warmup 1 --steps 4
    taihu_lm fixed35 $t lstm
    lm --lengths fixed --bptt 20 --threads $t --warmup 1 --steps 4
    taihu_lm fixed20 $t lstm
    lm --lengths variable --workload "$wl/ptb-valid.txt" --threads $t --warmup 1 --steps 4
    taihu_lm "$wl/ptb-valid.txt" $t lstm
    lm --lengths variable --workload "$wl/ptb-valid.txt" --threads $t --warmup 1 --steps 4 --cell gru
    taihu_lm "$wl/ptb-valid.txt" $t gru
  fi
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$out/load.log"

$py bench/pytorch/summarize_cavs.py "$out"
