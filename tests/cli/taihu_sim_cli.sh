#!/usr/bin/env bash
# End-to-end checks of taihu-sim: every shipped topology runs (small node
# counts), data mode checks the sums, the JSON report and the SVG plot are
# written, and bad input names the file, line and key.
#   usage: taihu_sim_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
sim="$build/apps/taihu-sim"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

for topo in taihulight fat_tree gpu_server_8 dragonfly; do
  expect "$topo runs" 0 "speedup over ring" -- \
    "$sim" --config-file="$src/config/topologies/$topo.ini" simulation.nodes="2 3 8" simulation.size_mb=1
done

expect "data mode, odd ranks, training" 0 "communication share" -- \
  "$sim" --config-file="$src/config/topologies/taihulight.ini" simulation.nodes="3 5 7" simulation.size_mb=0.01 \
  simulation.mode=data simulation.compute_seconds=0.01 --report="$work/r.json" --svg="$work/s.svg"
expect "JSON rows" 0 '"algorithm": "topology_aware", "nodes": 7, "seconds": [0-9.e-]+, "comm_seconds": [0-9.e-]+, "speedup": [0-9.e-]+, "comm_share"' -- \
  cat "$work/r.json"
expect "JSON has 15 rows" 0 '^15$' -- bash -c "grep -c '\"algorithm\"' '$work/r.json'"
expect "SVG plot" 0 '<polyline points=' -- cat "$work/s.svg"
expect "SVG closes" 0 '</svg>' -- cat "$work/s.svg"

expect "training a net on the SW26010 model" 0 "lenet.ini \(batch 8/node: [0-9.]+ ms per iteration on SW26010" -- \
  "$sim" --config-file="$src/config/topologies/taihulight.ini" simulation.net=../nets/lenet.ini simulation.batch=8 \
  simulation.nodes="2 4"

cat >"$work/bad.ini" <<INI
[network]
model = tree
group_sizes = 4
node_bandwidth = fast
INI
expect "bad value names file, line, key" 2 "bad.ini:4.*node_bandwidth" -- "$sim" --config-file="$work/bad.ini"
cat >"$work/typo.ini" <<INI
[network]
group_sizes = 4
node_bandwidth = 1e9
[simulation]
nodez = 2 4
INI
expect "unknown key" 2 "typo.ini:5.*nodez" -- "$sim" --config-file="$work/typo.ini"
expect "bad algorithm" 2 "algorithms" -- \
  "$sim" --config-file="$src/config/topologies/taihulight.ini" simulation.algorithms=butterfly
expect "no config" 2 "config-file" -- "$sim"

echo "taihu-sim cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
