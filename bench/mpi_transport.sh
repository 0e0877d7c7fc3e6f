#!/usr/bin/env bash
# [cluster] transport = taihu against transport = mpi, side by side in one session:
#   1. allreduce across 4 MPI ranks at 1/16/100 MB: the shard actors over taihu's data plane,
#      the same shard actors over the MPI transport, and Open MPI's MPI_Allreduce, alternating
#      run by run inside one mpirun (bench_mpi_transport_actors), under the allocator fastest
#      for MPI_Allreduce alone here (glibc, tcmalloc, jemalloc; bench/peer_at_its_best.sh:
#      the three share each process, so MPI_Allreduce's best is the one they run under);
#   2. LeNet on Fashion-MNIST, 4 ranks under mpirun, end to end (2 epochs), both transports
#      alternating, ROUNDS rounds: training images/s from the reports (median).
# Needs openmpi-bin and libopenmpi-dev (bash scripts/quickstart.sh bench-mpi installs them).
#   usage: bench/mpi_transport.sh [BUILD_DIR] [SIZES_MB] [RUNS] [ROUNDS]
set -euo pipefail
build=${1:-build}
sizes=${2:-1,16,100}
runs=${3:-7}
rounds=${4:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
[[ -x $build/bench/bench_mpi_transport_actors ]] ||
  { echo "no $build/bench/bench_mpi_transport_actors: build with libopenmpi-dev installed" >&2; exit 2; }
as_root=()
[[ $(id -u) -eq 0 ]] && as_root=(--allow-run-as-root)
mpi=(mpirun "${as_root[@]}" --oversubscribe -np 4)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/allreduce_mpi" "$src/bench/mpi/allreduce_mpi.c"
source "$src/bench/peer_at_its_best.sh"
pick_mpi_allocator "$work/allreduce_mpi" "${sizes##*,}" "${mpi[@]}"
echo "load: $(uptime)"
echo "## allreduce, 4 ranks (ring), median of $runs runs, allocator $best_allocator"
env "${allocator_args[@]}" "${mpi[@]}" "$build/bench/bench_mpi_transport_actors" --mb="$sizes" --runs="$runs" --algorithm=ring
echo
echo "## LeNet, Fashion-MNIST, 4 ranks under mpirun, 2 epochs: training images/s"
for round in $(seq "$rounds"); do
  for transport in taihu mpi; do
    "${mpi[@]}" "$build/apps/taihu-train" --config-file="$src/config/lenet-fashion-cluster.ini" nodes=4 workers=4 \
      epochs=2 cluster.secret_file= cluster.transport="$transport" output.dir="$work/$transport-$round" \
      --progress=lines --report="$work/$transport-$round.json" >"$work/$transport-$round.log" 2>&1 ||
      { echo "transport = $transport failed:"; tail -n 20 "$work/$transport-$round.log"; exit 1; }
  done
done
python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
print("| transport | images/s (median) | each round | test accuracy |\n|---|---|---|---|")
rates = {}
for t in ("taihu", "mpi"):
    reports = [json.load(open(f"{work}/{t}-{r}.json")) for r in range(1, rounds + 1)]
    rates[t] = [r["images_per_second"] for r in reports]
    accuracy = {round(r["test_accuracy"], 4) for r in reports}
    print(f"| {t} | {statistics.median(rates[t]):.0f} | {', '.join(f'{x:.0f}' for x in rates[t])} | {accuracy} |")
print(f"mpi / taihu: {statistics.median(rates['mpi']) / statistics.median(rates['taihu']):.2f}")
PY
echo "load: $(uptime)"
