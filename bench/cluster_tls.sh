#!/usr/bin/env bash
# What TLS costs a training run: LeNet on Fashion-MNIST, a coordinator and 4
# nodes (one worker each) on loopback, in three settings run alternately:
#   plain:  [cluster] tls = off, same_host_copy = false: every byte of both planes
#           through TCP in plaintext, as between hosts on a trusted network
#   tls:    [cluster] tls = always: every byte of both planes through TLS 1.3
#   local:  the default (between_hosts): nodes on one host use same-host channels,
#           without TLS (for reference)
# Prints each run's training images/s and wall seconds, then medians, and
# writes them as CSV to $OUT (default bench/results/cluster_tls.csv).
#   bench/cluster_tls.sh [BUILD_DIR] [ROUNDS] [key=value...]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
src=$(cd "$(dirname "$0")/.." && pwd)
train="$build/apps/taihu-train"
node="$build/apps/taihu-node"
out=${OUT:-$src/bench/results/cluster_tls.csv}
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz || -f $data/train-images-idx3-ubyte ]] ||
  { echo "needs Fashion-MNIST: apt-get install dataset-fashion-mnist" >&2; exit 2; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
head -c 32 /dev/urandom | base64 >"$work/secret" && chmod 600 "$work/secret"
common=(--config-file="$src/config/lenet-fashion-cluster.ini" nodes=4 workers=4 epochs=1
        data.limit_train=19200 data.limit_test=1000 cluster.secret_file="$work/secret" cluster.port=0
        output.dir="$work/out" output.checkpoint= output.metrics= --progress=quiet --log-level=warn "$@")
declare -A settings=(
  [plain]="cluster.tls=off cluster.same_host_copy=false"
  [tls]="cluster.tls=always"
  [local]="cluster.tls=between_hosts"
)

run() {  # run NAME: one cluster run; prints "NAME images/s seconds"
  local name=$1 start port
  rm -f "$work/port"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086  # the setting is a list of words
  "$train" "${common[@]}" ${settings[$name]} cluster.port_file="$work/port" --report="$work/r.json" \
    >"$work/$name.log" 2>&1 &
  local coordinator=$!
  pids+=("$coordinator")
  for _ in $(seq 300); do [[ -s $work/port ]] && break; sleep 0.1; done
  port=$(cat "$work/port")
  for i in 1 2 3 4; do
    "$node" --coordinator=127.0.0.1:"$port" --secret-file="$work/secret" --name="n$i" --log-level=warn \
      >"$work/$name-n$i.log" 2>&1 &
    pids+=("$!")
  done
  wait "$coordinator" || { echo "$name: the run failed:" >&2; tail "$work/$name.log" >&2; exit 1; }
  wait
  python3 - "$name" "$work/r.json" "$start" "$(date +%s.%N)" <<'PY'
import json, sys
name, path, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
r = json.load(open(path))
print(f"{name} {r['images_per_second']:.1f} {end - start:.2f} {r['test_accuracy']:.4f}")
PY
}

echo "load: $(uptime)"
mkdir -p "$(dirname "$out")"
echo "setting,round,images_per_second,wall_seconds,test_accuracy" >"$out"
for round in $(seq "$rounds"); do
  for name in plain tls local; do
    read -r n ips secs acc < <(run "$name")
    echo "round $round: $n $ips images/s, $secs s, accuracy $acc"
    echo "$n,$round,$ips,$secs,$acc" >>"$out"
  done
done
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for name in ("plain", "tls", "local"):
    xs = [float(r["images_per_second"]) for r in rows if r["setting"] == name]
    ws = [float(r["wall_seconds"]) for r in rows if r["setting"] == name]
    med[name] = statistics.median(xs)
    print(f"{name:6s} median {med[name]:8.1f} images/s, {statistics.median(ws):6.2f} s wall  ({len(xs)} runs)")
print(f"tls / plain: {med['tls'] / med['plain']:.3f}   local / plain: {med['local'] / med['plain']:.3f}")
PY
echo "load: $(uptime)"
