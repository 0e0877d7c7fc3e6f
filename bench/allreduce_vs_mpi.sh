#!/usr/bin/env bash
# Allreduce across 4 processes on loopback, side by side in one run:
#   taihu: shard actors over the data plane (bench_remote_allreduce_actors)
#   OpenMPI MPI_Allreduce over TCP on loopback (--mca btl tcp,self), and with
#   its default shared-memory transport for reference.
# Needs openmpi-bin and libopenmpi-dev (only for this benchmark).
#   usage: bench/allreduce_vs_mpi.sh [BUILD_DIR] [SIZES_MB] [RUNS]
set -euo pipefail
build=${1:-build}
sizes=${2:-1,16,100}
runs=${3:-7}
here=$(cd "$(dirname "$0")" && pwd)
command -v mpicc >/dev/null || { echo "needs OpenMPI: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/allreduce_mpi" "$here/mpi/allreduce_mpi.c"
root=()
[[ $(id -u) -eq 0 ]] && root=(--allow-run-as-root)
mpi=(mpirun "${root[@]}" --oversubscribe -np 4)
echo "load: $(uptime)"
echo "## taihu (4 processes, data plane over TCP loopback)"
"$build/bench/bench_remote_allreduce_actors" --ranks=4 --mb="$sizes" --runs="$runs" --algorithm=ring,rabenseifner,direct
echo "## OpenMPI MPI_Allreduce, TCP over loopback (btl tcp,self)"
"${mpi[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo "$tmp/allreduce_mpi" "$sizes" "$runs"
echo "## OpenMPI MPI_Allreduce, default transports (shared memory), for reference"
"${mpi[@]}" "$tmp/allreduce_mpi" "$sizes" "$runs"
echo "load: $(uptime)"
