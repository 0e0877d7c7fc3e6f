#!/usr/bin/env bash
# Allreduce across 4 hosts of the multi-host test bed (tests/multihost/testbed.sh: network
# namespaces on tbf-shaped links through one bridge), one rank per host under mpirun (its daemons
# started through the bed's rsh agent), four ways alternating run by run in the same processes
# (bench_mpi_transport_actors): taihu's shard actors over the data plane with tls = off and with
# TLS (between hosts: on), over the MPI transport, and Open MPI's MPI_Allreduce over TCP
# (btl tcp,self). Every time also as a share of the ring's bound 2(N-1)/N x S / B.
# Open MPI runs with mpi_yield_when_idle = 1 (YIELD=0: without): the bed's 4 ranks share 2 cores,
# and MPI_Allreduce's busy polling while it waits would take the cores from the ranks that work
# (measured at its best: see bench/RESULTS.md).
# Needs root, openmpi-bin and libopenmpi-dev.
# ALGORITHM=pipelined_ring: taihu's algorithm (default ring); MPI_MCA="--mca K V ...": more
# settings for Open MPI (e.g. its allreduce algorithm: coll_tuned_use_dynamic_rules 1,
# coll_tuned_allreduce_algorithm 4 for its ring).
#   usage: sudo bench/multihost_allreduce.sh [BUILD_DIR] [RATES] [SIZES_MB] [RUNS]
#   e.g.   sudo bench/multihost_allreduce.sh build 1gbit,10gbit 1,16,100 5
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
rates=${2:-1gbit,10gbit}
sizes=${3:-1,16,100}
runs=${4:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
bench="$build/bench/bench_mpi_transport_actors"
[[ -x $bench ]] || { echo "no $bench: build with libopenmpi-dev installed" >&2; exit 2; }
source "$src/tests/multihost/testbed.sh"
work=$(mktemp -d -p /var/tmp taihu-allreduce.XXXXXX)
trap 'rm -rf "$work"' EXIT
printf 'h1 slots=1\nh2 slots=1\nh3 slots=1\nh4 slots=1\n' >"$work/hostfile"
echo "load: $(uptime)"
for rate in ${rates//,/ }; do
  tb_up 4 "$rate" || exit $?
  gbps=$(python3 -c "import sys,re; m=re.fullmatch(r'([0-9.]+)([kmg]?)bit', sys.argv[1]); \
print(float(m[1]) * {'k': 1e-6, 'm': 1e-3, 'g': 1}[m[2]])" "$rate")
  echo "## 4 hosts, links at $rate, round trip $(tb_rtt h1 h2) us"
  tb_exec h1 mpirun --allow-run-as-root --hostfile "$work/hostfile" --mca plm_rsh_agent "$src/tests/multihost/tb-rsh" \
    --mca btl tcp,self --mca mpi_yield_when_idle "${YIELD:-1}" --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 -np 4 \
    ${MPI_MCA:-} "$bench" --mb="$sizes" --runs="$runs" --algorithm="${ALGORITHM:-ring}" --tls=off,between_hosts \
    --link-gbps="$gbps"
  tb_down
done
echo "load: $(uptime)"
