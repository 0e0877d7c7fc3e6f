#!/usr/bin/env bash
# Allreduce across 4 processes on loopback, side by side in one run:
#   taihu: shard actors over the data plane (bench_remote_allreduce_actors),
#     free to run on any core, then with rank r pinned to core r mod cores
#   OpenMPI MPI_Allreduce over TCP on loopback (--mca btl tcp,self), with its
#     default shared-memory transport, and with that transport and its ranks
#     bound to cores the same way (--map-by core --bind-to core), each under
#     its fastest allocator here (glibc, tcmalloc, jemalloc: probed at the
#     largest size, default transports; bench/peer_at_its_best.sh).
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
source "$here/peer_at_its_best.sh"
pick_mpi_allocator "$tmp/allreduce_mpi" "${sizes##*,}" "${mpi[@]}"
mpi=(env "${allocator_args[@]}" "${mpi[@]}")
echo "load: $(uptime)"
echo "## taihu (4 processes, data plane: TCP loopback and same-host channels)"
"$build/bench/bench_remote_allreduce_actors" --ranks=4 --mb="$sizes" --runs="$runs" --algorithm=ring,rabenseifner,direct
echo "## taihu, rank r pinned to core r mod cores"
"$build/bench/bench_remote_allreduce_actors" --ranks=4 --mb="$sizes" --runs="$runs" --algorithm=ring,rabenseifner,direct --pin=1
echo "## OpenMPI MPI_Allreduce, TCP over loopback (btl tcp,self)"
"${mpi[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo "$tmp/allreduce_mpi" "$sizes" "$runs"
echo "## OpenMPI MPI_Allreduce, default transports (shared memory)"
"${mpi[@]}" "$tmp/allreduce_mpi" "$sizes" "$runs"
echo "## OpenMPI MPI_Allreduce, shared memory, rank r bound to core r mod cores"
"${mpi[@]}" --map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed "$tmp/allreduce_mpi" "$sizes" "$runs"
echo "load: $(uptime)"
