#!/usr/bin/env bash
# A 1-coordinator + N-node run (default: 3 nodes, LeNet) over realistic links on one machine:
# network namespaces joined by veth pairs to a bridge, each node's link
# shaped with tc tbf (default 1gbit). Uses only addresses inside the
# namespaces it creates (10.77.0.0/24) and removes them on exit. Needs root
# (ip netns, tc). This kernel has no netem: for latency, add it in user space.
#   usage: sudo [NODES=N] [CONFIG=FILE] [NODE_OPTIONS="--dead-after=30"] [REPORT=FILE] \
#               bench/netns_cluster.sh [BUILD_DIR] [RATE] [key=value ...]
#   e.g.   sudo bench/netns_cluster.sh build 1gbit epochs=1 data.limit_train=9600
#          sudo NODES=4 CONFIG=config/alexnet-bn-cluster.ini NODE_OPTIONS=--dead-after=30 \
#               bench/netns_cluster.sh build 1gbit
# (Bulk transfers fill the shaped links, and control-plane heartbeats queue behind them: give
# nodes a dead_after as long as the config's [cluster] dead_after.)
set -euo pipefail
build=${1:-build}
rate=${2:-1gbit}
shift $(( $# >= 2 ? 2 : $# ))
src=$(cd "$(dirname "$0")/.." && pwd)
config=${CONFIG:-$src/config/lenet-fashion-cluster.ini}
nodes=${NODES:-3}
prefix=taihu$$
names=(c)
addr=(10.77.0.1)
for ((i = 1; i <= nodes; i++)); do
  names+=("n$i")
  addr+=("10.77.0.$((10 + i))")
done
work=$(mktemp -d)
cleanup() {
  for n in "${names[@]}"; do ip netns del "$prefix-$n" 2>/dev/null || true; done
  ip netns del "$prefix-sw" 2>/dev/null || true
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$prefix-sw"
ip -n "$prefix-sw" link add br0 type bridge
ip -n "$prefix-sw" link set br0 up
for i in "${!names[@]}"; do
  ns="$prefix-${names[$i]}"
  ip netns add "$ns"
  ip link add "v$i-$$" type veth peer name "p$i-$$"
  ip link set "v$i-$$" netns "$ns"
  ip link set "p$i-$$" netns "$prefix-sw"
  ip -n "$ns" link set "v$i-$$" name eth0
  ip -n "$ns" addr add "${addr[$i]}/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$prefix-sw" link set "p$i-$$" master br0 up
  # Egress of every host is shaped: both directions of each link are limited.
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
done
echo "namespaces up: coordinator ${addr[0]}, nodes ${addr[*]:1}; links shaped to $rate"
ip netns exec "$prefix-n1" bash -c "exec 3<>/dev/tcp/${addr[0]}/9 2>/dev/null" || true  # (no ping needed)

head -c 32 /dev/urandom | base64 >"$work/secret" && chmod 600 "$work/secret"
# The namespaces share one host: without same_host_copy=false the nodes would copy chunks
# straight from each other's memory and bypass the shaped links.
ip netns exec "$prefix-c" "$build/apps/taihu-train" --config-file="$config" nodes="$nodes" workers="$nodes" \
  cluster.same_host_copy=false cluster.listen="${addr[0]}" cluster.secret_file="$work/secret" output.dir="$work/out" \
  --report="$work/report.json" --progress=lines "$@" &
coordinator=$!
for ((i = 1; i <= nodes; i++)); do
  ip netns exec "$prefix-${names[$i]}" "$build/apps/taihu-node" --coordinator="${addr[0]}:4750" \
    --secret-file="$work/secret" --listen="${addr[$i]}" --name="${names[$i]}" ${NODE_OPTIONS:-} \
    >"$work/${names[$i]}.log" 2>&1 &
done
wait "$coordinator"
rc=$?
wait
cat "$work/report.json" 2>/dev/null | head -24
[[ -n ${REPORT:-} && -f $work/report.json ]] && cp "$work/report.json" "$REPORT"
exit $rc
