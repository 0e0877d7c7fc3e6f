#!/usr/bin/env bash
# taihu-sim against the multi-host test bed (tests/multihost/testbed.sh): the bed's allreduce and
# training times, measured, next to what taihu-sim predicts for config/topologies/testbed.ini.
#
#   calibrate  one TCP flow at each rate (tests/multihost/flow.py) checks the links' goodput; on
#              the unshaped bed (tbf at 100gbit: the 2 shared cores set the pace) AlexNet-BN
#              with tls = off and with TLS and LeNet with TLS train, and the training cases'
#              CPU rates and per-message latency are fitted to them (bench/multihost_vs_sim.py).
#   allreduce  4 hosts, 1gbit: bench_mpi_transport_actors, ring, 64 KiB (to which the model's
#              per-message latency is fitted: 16 KiB messages, all latency; LATENCY_RUNS runs,
#              default 31) and 1/16/100 MiB (the cases compared), tls = off and between_hosts,
#              RUNS runs each (median).
#   unshaped   the same on the unshaped bed: the allreduce cases' CPU rates are fitted to its
#              16 MiB runs (the bench's processes cost more CPU per byte than taihu-node's: an
#              MPI progress thread that polls; see the table's notes).
#   train      coordinator + 4 taihu-node on h1..h4: LeNet (Fashion-MNIST, batch 16 per worker)
#              and AlexNet-BN (synthetic 227x227, batch 2 per worker), dense ring allreduce and
#              RedSync (bsearch, density 0.001), at 100mbit and 1gbit, TLS between hosts (the
#              default). The report's medians per iteration: wall time (measured) and the slowest
#              worker's forward + backward + solver step (taihu-sim's compute, measured in the
#              same run on the same shared cores).
#   table      taihu-sim's predictions with the fitted keys next to the measurements.
#
# Every part writes its raw results to OUT (default /var/tmp/taihu-vs-sim), so `table` can be
# rerun alone. Needs root, openmpi-bin, libopenmpi-dev (bench_mpi_transport_actors) and
# Fashion-MNIST (/usr/share/datasets/fashion-mnist).
#   usage: sudo [OUT=DIR] [RUNS=7] bench/multihost_vs_sim.sh [BUILD_DIR] [part...]
#   e.g.   sudo bench/multihost_vs_sim.sh build calibrate unshaped allreduce train table
# Iterations per training run: LENET_ITERATIONS (200 at 1gbit, half at 100mbit),
# ALEXNET_ITERATIONS (8 at 1gbit, 4 at 100mbit). Check `uptime` first: the bed shares the
# machine's cores with whatever else runs there, and the fitted latency and CPU rates absorb the
# load of the moment; run calibrate and the measurements together.
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
shift
parts=("$@")
((${#parts[@]})) || parts=(calibrate unshaped allreduce train table)
src=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/var/tmp/taihu-vs-sim}
runs=${RUNS:-7}
lenet_its=${LENET_ITERATIONS:-200}
alexnet_its=${ALEXNET_ITERATIONS:-8}
bench="$build/bench/bench_mpi_transport_actors"
mkdir -p "$out"
source "$src/tests/multihost/testbed.sh"
work=$(mktemp -d -p /var/tmp taihu-vs-sim.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
printf 'h1 slots=1\nh2 slots=1\nh3 slots=1\nh4 slots=1\n' >"$work/hostfile"
head -c 32 /dev/urandom | base64 >"$work/secret" && chmod 600 "$work/secret"
load() { echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"; }

# probe FILE [rsh]: the cores the bed can get now (tests/multihost/cpu_probe.py on every host at
# once); appends the sum to FILE. The machine's other work takes its share of the 2 cores, and
# the kernel shares them between sessions first (autogroup), then between a session's threads:
# the probes start as the measured processes do. Without rsh, all from this shell's session
# (taihu-node by tb_exec); with rsh, h2..hH each in a session of its own, as mpirun's daemons
# started through tb-rsh (the exec server starts a new session per command), h1 in this one.
probe() {
  local i
  for i in $(seq 50); do [[ -S $TB_DIR/exec.sock ]] && break; sleep 0.1; done  # tb_up starts the server
  for ((i = 1; i <= TB_HOSTS; i++)); do
    if [[ -n ${2:-} && $i -gt 1 ]]; then
      "$src/tests/multihost/tb-rsh" "h$i" python3 "$src/tests/multihost/cpu_probe.py" 1 >"$work/probe.$i" &
    else
      tb_exec "h$i" python3 "$src/tests/multihost/cpu_probe.py" 1 >"$work/probe.$i" &
    fi
  done
  wait
  cat "$work"/probe.* | paste -sd+ | bc >>"$1"
}

# allreduce_runs FILE SIZES_MIB[@RUNS]...: the bench on the bed that is up, one invocation per
# argument (a comma-separated list of sizes, RUNS runs each, default $runs) between two probes;
# every run a JSON line in FILE with the probes' mean ("cores").
allreduce_runs() {
  [[ -x $bench ]] || { echo "no $bench: build it (needs libopenmpi-dev)" >&2; return 2; }
  local spec mb n file=$1
  shift
  : >"$file"
  for spec in "$@"; do
    mb=${spec%@*}
    n=$runs
    [[ $spec == *@* ]] && n=${spec#*@}
    rm -f "$work/cores"
    probe "$work/cores" rsh
    # mpi_yield_when_idle: 4 ranks on 2 cores; busy-polling barriers would starve the others.
    tb_exec h1 mpirun --allow-run-as-root --hostfile "$work/hostfile" \
      --mca plm_rsh_agent "$src/tests/multihost/tb-rsh" --mca btl tcp,self --mca mpi_yield_when_idle 1 \
      --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 -np 4 "$bench" --mb="$mb" --runs="$n" \
      --algorithm=ring --ways=plane --tls=off,between_hosts --baseline=no --samples="$work/samples.jsonl" 2>&1 |
      grep "^| [0-9]"
    probe "$work/cores" rsh
    python3 - "$work/samples.jsonl" "$work/cores" >>"$file" <<'PY'
import json, sys
cores = [float(x) for x in open(sys.argv[2])]
for line in open(sys.argv[1]):
    r = json.loads(line)
    r["cores"] = sum(cores) / len(cores)
    print(json.dumps(r))
PY
  done
}

# flow RATE FILE: one TCP flow h1 -> h2 (warm connection), JSON lines per message size.
flow() {
  tb_exec h2 python3 "$src/tests/multihost/flow.py" serve "$(tb_addr h2)" &
  local server=$!
  sleep 0.3
  tb_exec h1 python3 "$src/tests/multihost/flow.py" send "$(tb_addr h2)" 256k,4M,64M 5 >"$2"
  wait "$server"
}

# calibrate: the links' goodput (one TCP flow per rate), and the training runs on the unshaped
# bed that the training cases' CPU rates and latency are fitted to: AlexNet-BN with tls = off
# (the stack's CPU cost per byte: its allreduce is CPU-bound there) and with TLS (TLS's cost on
# top), LeNet with TLS (per-message latency: its small messages cost little CPU).
calibrate() {
  load
  tb_up 4 1gbit >/dev/null || return $?
  flow 1gbit "$out/flow-1gbit.jsonl"
  echo "rtt_us $(tb_rtt h1 h2)" >"$out/rtt.txt"
  tb_down
  tb_up 4 100mbit >/dev/null || return $?
  flow 100mbit "$out/flow-100mbit.jsonl"
  tb_down
  echo "## calibration: training on the unshaped bed (tbf at 100gbit)"
  train_run 100gbit calib-alexnet-off "$src/config/alexnet-bn-cluster.ini" 6 data.train_size=48 cluster.tls=off
  train_run 100gbit calib-alexnet "$src/config/alexnet-bn-cluster.ini" 6 data.train_size=48
  train_run 100gbit calib-lenet "$src/config/lenet-fashion-cluster.ini" 200 epochs=1 data.limit_train=12800 \
    sync.algorithm=ring
  load
}

# allreduce RATE: the ring allreduce cases at RATE (100gbit: unshaped, the cores set the pace).
allreduce() {
  load
  tb_up 4 "$1" >/dev/null || return $?
  echo "## 4 hosts at $1: ring allreduce (median of $runs runs, the slowest rank's start -> result)"
  # 64 KiB, to which the per-message latency is fitted, LATENCY_RUNS times (default 31): the
  # latency of threads waking up on shared cores varies from run to run, and on some days a
  # third of the runs stall for 30-150 ms (bench/RESULTS.md, "Across hosts"); the median of
  # many runs is the typical latency, which 7 runs do not pin down.
  allreduce_runs "$out/allreduce-$1.jsonl" "0.0625@${LATENCY_RUNS:-31}" 1 16 100
  tb_down
  load
}

# train_run RATE NAME CONFIG ITERATIONS BATCH_KEY... : coordinator on h1, a node on each of h1..h4.
train_run() {
  local rate=$1 name=$2 config=$3 its=$4
  shift 4
  tb_up 4 "$rate" >/dev/null || return $?
  rm -f "$work/port" "$work/cores"
  probe "$work/cores"
  tb_exec h1 "$build/apps/taihu-train" --config-file="$config" nodes=4 workers=4 cluster.secret_file="$work/secret" \
    cluster.listen="$(tb_addr h1)" cluster.port=0 cluster.port_file="$work/port" output.dir="$work/out-$name" \
    output.checkpoint= data.limit_test=8 cluster.dead_after=600 --report="$out/train-$name-$rate.json" \
    --progress=quiet "$@" \
    >"$work/$name.log" 2>&1 &
  local coordinator=$! i rc
  for _ in $(seq 300); do [[ -s $work/port ]] && break; sleep 0.1; done
  for i in 1 2 3 4; do
    tb_exec "h$i" "$build/apps/taihu-node" --coordinator="$(tb_addr h1):$(cat "$work/port")" \
      --secret-file="$work/secret" --name="n$i" --join-timeout=60 --dead-after=600 >"$work/$name-n$i.log" 2>&1 &
  done
  wait "$coordinator"
  rc=$?
  wait
  probe "$work/cores"
  python3 -c "import sys; v=[float(x) for x in open(sys.argv[1])]; print(sum(v)/len(v))" "$work/cores" \
    >"$out/cores-train-$name-$rate.txt"
  tb_down
  if [[ $rc -ne 0 ]]; then
    echo "$name at $rate failed (exit $rc):"
    tail -5 "$work/$name.log"
  fi
  return $rc
}

train() {
  local rate its redsync=(compress.method=bsearch compress.density=0.001 compress.momentum=0.9 solver.momentum=0)
  for rate in 1gbit 100mbit; do
    load
    its=$lenet_its
    [[ $rate == 100mbit ]] && its=$((lenet_its / 2))
    echo "## LeNet, 4 hosts at $rate, $its iterations"
    train_run "$rate" lenet "$src/config/lenet-fashion-cluster.ini" "$its" epochs=1 \
      data.limit_train=$((its * 64)) sync.algorithm=ring
    train_run "$rate" lenet-redsync "$src/config/lenet-fashion-cluster.ini" "$its" epochs=1 \
      data.limit_train=$((its * 64)) sync.algorithm=ring compress.min_elements=32768 compress.momentum_masking=true \
      "${redsync[@]}"
    its=$alexnet_its
    [[ $rate == 100mbit ]] && its=$((alexnet_its / 2))
    echo "## AlexNet-BN, 4 hosts at $rate, $its iterations"
    train_run "$rate" alexnet "$src/config/alexnet-bn-cluster.ini" "$its" data.train_size=$((its * 8))
    train_run "$rate" alexnet-redsync "$src/config/alexnet-bn-cluster.ini" "$its" data.train_size=$((its * 8)) \
      "${redsync[@]}"
  done
  load
}

for part in "${parts[@]}"; do
  case $part in
  calibrate | train) "$part" || exit $? ;;
  allreduce) allreduce 1gbit || exit $? ;;
  unshaped) allreduce 100gbit || exit $? ;;
  table) python3 "$src/bench/multihost_vs_sim.py" "$build" "$src/config/topologies/testbed.ini" "$out" ;;
  *)
    echo "unknown part '$part' (calibrate, allreduce, unshaped, train, table)" >&2
    exit 2
    ;;
  esac
done
