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

expect "training a net on the SW26010 model" 0 \
  "lenet.ini \(batch 8/node: [0-9.]+ ms per iteration on SW26010 \([0-9.]+-[0-9.]+ across the lock-step range\)" -- \
  "$sim" --config-file="$src/config/topologies/taihulight.ini" simulation.net=../nets/lenet.ini simulation.batch=8 \
  simulation.nodes="2 4" --report="$work/net.json"
expect "a net's speedup across the lock-step range brackets the central one" 0 "^range ok" -- python3 - "$work/net.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows and all(r["speedup_low"] <= r["speedup"] <= r["speedup_high"] for r in rows), rows
print("range ok")
PY

# Training as taihu-train runs it: a bucket handed over when backward ends gives the serial
# iteration (compute, then the collective) to the digits printed; the same elements in buckets
# handed over earlier overlap backward; neither beats compute + solver step.
testbed=(--config-file="$src/config/topologies/testbed.ini" --log-level=warn simulation.compute_seconds=0.05)
"$sim" "${testbed[@]}" simulation.size_mb=4 --report="$work/serial.json" >/dev/null
"$sim" "${testbed[@]}" simulation.buckets=1000000@0.05 --report="$work/late.json" >/dev/null
"$sim" "${testbed[@]}" simulation.buckets="600000@0.01 400000@0.03:ring" simulation.update_seconds=0.002 \
  --report="$work/early.json" >/dev/null
expect "buckets: late = serial, early overlaps backward" 0 "^overlap ok" -- python3 - "$work" <<'PY'
import json, sys
serial, late, early = (json.load(open(f"{sys.argv[1]}/{n}.json"))[0] for n in ("serial", "late", "early"))
assert abs(late["seconds"] - serial["seconds"]) <= 1e-8 * serial["seconds"], (late, serial)  # 9 digits printed
assert late["bytes"] == serial["bytes"], (late, serial)
assert 0.05 + 0.002 <= early["seconds"] < late["seconds"], (early, late)
assert abs(early["comm_seconds"] - (early["seconds"] - 0.052)) < 1e-8, early
print("overlap ok: serial %.6f s, late %.6f s, early %.6f s" % (serial["seconds"], late["seconds"], early["seconds"]))
PY
# The ranks' measured work around a bucket (taihu-train's compress/decompress/unpack_seconds),
# jobs on the bed's 2 shared cores: the unpacking waits for backward's end, and 4 hosts' 5 ms
# unpackings take two turns of the 2 cores: 0.05 + 2 x 0.005, then the solver step (the
# collective itself ends before backward's end). Likewise each rank's work before and after a
# collective that starts when backward ends: two turns each.
"$sim" "${testbed[@]}" simulation.buckets=100000@0.01 simulation.unpack_seconds=0.005 \
  simulation.update_seconds=0.002 --report="$work/unpack.json" >/dev/null
"$sim" "${testbed[@]}" simulation.buckets=1000000@0.05 simulation.compress_seconds=0.004 \
  simulation.decompress_seconds=0.003 --report="$work/work.json" >/dev/null
expect "buckets: measured work on the hosts' cores" 0 "^work ok" -- python3 - "$work" <<'PY'
import json, sys
late, unpack, work = (json.load(open(f"{sys.argv[1]}/{n}.json"))[0] for n in ("late", "unpack", "work"))
assert abs(unpack["seconds"] - 0.062) < 1e-9, unpack
assert late["seconds"] + 0.004 + 0.003 < work["seconds"] <= late["seconds"] + 2 * (0.004 + 0.003) + 1e-9, (work, late)
print("work ok: unpack %.6f s, compress + decompress %.6f s (late %.6f s)" %
      (unpack["seconds"], work["seconds"], late["seconds"]))
PY
expect "work for every bucket" 2 "compress_seconds.*lists 1 values for 2 buckets" -- \
  "$sim" "${testbed[@]}" simulation.buckets="100@0.01 100@0.02" simulation.compress_seconds=0.001
expect "unpack_seconds without buckets" 2 "unpack_seconds.*only with buckets" -- \
  "$sim" "${testbed[@]}" simulation.unpack_seconds=0.01
expect "a bad bucket is named" 2 "buckets.*'12@x' is not ELEMENTS@SECONDS" -- \
  "$sim" "${testbed[@]}" simulation.buckets="100@0.01 12@x"
expect "a bucket after backward" 2 "compute_seconds.*ready at 0.2 s, after backward ended" -- \
  "$sim" "${testbed[@]}" simulation.buckets=100@0.2
expect "update_seconds without buckets" 2 "update_seconds.*only with buckets" -- \
  "$sim" "${testbed[@]}" simulation.update_seconds=0.01

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
