#!/usr/bin/env bash
# End-to-end checks of taihu-train's command line and its handling of bad
# input: each case runs the real binary and checks the exit code and that the
# message names what the user must fix.
#   usage: taihu_train_cli.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
train="$build/apps/taihu-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

cp "$src/config/nets/lenet.ini" "$work/lenet.ini"
cat >"$work/app.ini" <<INI
net = lenet.ini
epochs = 1
batch_size = 16
test_batch_size = 64
[data]
source = synthetic
shape = 1 28 28
classes = 10
train_size = 64
test_size = 64
[solver]
type = sgd
base_lr = 0.01
[output]
dir = $work/out
INI

expect "help" 0 "usage: taihu-train" -- "$train" --help
expect "version names the build" 0 "^taihu-train [0-9]+\.[0-9]+\.[0-9]+ \(git " -- "$train" --version
expect "version names the protocols" 0 "^protocols: cluster [0-9]+, data plane [0-9]+" -- "$train" --version
expect "taihu-node version" 0 "^taihu-node [0-9]+\.[0-9]+\.[0-9]+ \(git " -- "$build/apps/taihu-node" --version
expect "torchrun ranks need a secret file" 2 "torchrun has no store to pass a secret through: give \[cluster\] secret_file" -- env RANK=1 WORLD_SIZE=2 MASTER_ADDR=h MASTER_PORT=9 "$train" --config-file="$work/app.ini"
expect "launcher size against nodes" 2 "is 3, but torchrun started 2 ranks" -- env RANK=0 WORLD_SIZE=2 MASTER_ADDR=h MASTER_PORT=9 "$train" --config-file="$work/app.ini" nodes=3
expect "partial launcher environment" 2 "RANK is set but WORLD_SIZE is not" -- env RANK=1 "$train" --config-file="$work/app.ini"
expect "missing config flag" 2 "config-file" -- "$train"
expect "dump-config shows overrides" 0 "base_lr = 0.5" -- "$train" --config-file="$work/app.ini" solver.base_lr=0.5 --dump-config
expect "trains synthetic" 0 "test accuracy" -- "$train" --config-file="$work/app.ini" --progress=lines --report="$work/r.json"
expect "report has keys" 0 '"test_accuracy"' -- cat "$work/r.json"

expect "2 workers train synthetic" 0 "test accuracy" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 --progress=lines --report="$work/r2.json"
expect "report has workers and buckets" 0 '"workers": 2' -- cat "$work/r2.json"
expect "report names each bucket's algorithm" 0 '"algorithm": "' -- cat "$work/r2.json"
expect "3 workers with direct allreduce" 0 "test accuracy" -- "$train" --config-file="$work/app.ini" workers=3 batch_size=8 sync.algorithm=direct --progress=quiet --report="$work/r3.json"
expect "report names direct" 0 '"algorithm": "direct"' -- cat "$work/r3.json"
expect "unknown algorithm names the key" 2 "algorithm" -- "$train" --config-file="$work/app.ini" workers=2 sync.algorithm=rin
expect "2 workers with RedSync compression report bytes" 0 "test accuracy" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 compress.method=bsearch compress.density=0.01 compress.min_elements=0 --progress=quiet --report="$work/rc.json"
expect "report has bytes per iteration" 0 '"bytes_sent_per_iteration"' -- cat "$work/rc.json"
expect "compressor momentum needs solver momentum 0" 2 "momentum.*must be 0 when \\[compress\\] momentum > 0" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 solver.momentum=0.9 compress.method=topk compress.momentum=0.9
expect "solver clipping with compressor momentum warns" 0 "clip_norm" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 solver.momentum=0 solver.clip_gradients=5 compress.method=topk compress.momentum=0.9 compress.min_elements=0 --progress=quiet
expect "2 workers write a checkpoint" 0 "test accuracy" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 output.checkpoint=dp.ckpt --progress=quiet
expect "2 workers resume from it" 0 "resumed from.*epoch 2 batch 0" -- "$train" --config-file="$work/app.ini" workers=2 batch_size=8 epochs=2 output.checkpoint=dp2.ckpt --resume="$work/out/dp.ckpt" --progress=quiet

printf 'net = lenet.ini\nthis is not a key value line\n' >"$work/malformed.ini"
expect "malformed config names file and line" 2 "malformed.ini:2" -- "$train" --config-file="$work/malformed.ini"

# Net keys on the command line, as docs/config.md shows them (were: unknown option).
expect "a layer key on the command line" 0 "net 'lenet': 415768 learnable parameters" -- \
  "$train" --config-file="$work/app.ini" layer.conv1.num_output=8 iterations=1 --progress=quiet
expect "an unknown layer on the command line" 2 "command line: key 'num_output' in \[layer conv9\]: the net '.*lenet.ini' has no \[layer conv9\]" -- \
  "$train" --config-file="$work/app.ini" layer.conv9.num_output=8
expect "an unknown layer key on the command line" 2 "command line: key 'num_outptu' in \[layer conv1\]: unknown option" -- \
  "$train" --config-file="$work/app.ini" layer.conv1.num_outptu=8
expect "unknown root key" 2 "app.ini.*epochz|epochz.*unknown option|unknown option.*epochz" -- "$train" --config-file="$work/app.ini" epochz=3
expect "unknown solver type" 2 "solver" -- "$train" --config-file="$work/app.ini" solver.type=sgdd

sed 's/type = Pooling/type = Poolingg/' "$work/lenet.ini" >"$work/badtype.ini"
expect "unknown layer type names line and known types" 2 "badtype.ini:[0-9]+.*unknown type 'Poolingg'.*Convolution" -- "$train" --config-file="$work/app.ini" net=badtype.ini

sed 's/kernel_size = 5/kernel_size = 5\nkernal = 3/' "$work/lenet.ini" >"$work/badopt.ini"
expect "unknown layer option" 2 "badopt.ini:[0-9]+.*kernal.*unknown option" -- "$train" --config-file="$work/app.ini" net=badopt.ini

expect "data shape mismatch names the input" 2 "shape 1x3x3.*'data' expects 1x28x28" -- "$train" --config-file="$work/app.ini" data.shape="1 3 3"
sed 's/^shape = 1 28 28/shape = 1 3 3/' "$work/lenet.ini" >"$work/small.ini"
expect "layer shape mismatch names the layer" 2 "layer 'conv1' \(Convolution\).*3" -- "$train" --config-file="$work/app.ini" net=small.ini data.shape="1 3 3"

sed -e '/^source = synthetic/,/^test_size/d' -e 's/^\[data\]/[data]\nsource = fashion-mnist/' "$work/app.ini" >"$work/fashion.ini"
expect "missing dataset says how to install" 2 "apt-get install dataset-fashion-mnist" -- "$train" --config-file="$work/fashion.ini" data.dir="$work/nowhere"

fm=/usr/share/datasets/fashion-mnist
if [[ -f $fm/train-images-idx3-ubyte.gz ]]; then
  mkdir -p "$work/fm"
  cp $fm/*.gz "$work/fm/"
  gzip -dc $fm/train-labels-idx1-ubyte.gz | head -c 1000 >"$work/fm/train-labels-idx1-ubyte"
  rm "$work/fm/train-labels-idx1-ubyte.gz"
  expect "truncated idx file" 2 "truncated" -- "$train" --config-file="$work/fashion.ini" data.dir="$work/fm"
else
  echo "SKIP: truncated idx file (dataset-fashion-mnist not installed)"
fi

# The simulated SW26010 (device = sw26010): 2 iterations of LeNet on its 4
# core-group actors; the report has the simulated figures and a per-layer list.
expect "device=sw26010 trains and reports simulated images/s" 0 "simulated images/s" -- "$train" --config-file="$work/app.ini" \
  device=sw26010 iterations=2 --progress=quiet --report="$work/sw.json"
expect "sw26010 report: simulated_images_per_second" 0 '"simulated_images_per_second": [0-9.e+]+' -- cat "$work/sw.json"
expect "sw26010 report: per-layer method and times" 0 '"name": "conv2", "type": "Convolution", "method": "(explicit|implicit)", "simulated": true, "forward_seconds": [0-9.e-]+, "backward_seconds"' -- cat "$work/sw.json"
expect "iterations=2 stops after 2 iterations" 0 '"iterations": 2,' -- cat "$work/sw.json"
expect "unknown device names the key" 2 "device.*cpu, sw26010" -- "$train" --config-file="$work/app.ini" device=gpu

# Weights of 3e38 overflow conv1 to inf; conv2's mixed-sign weights then make inf - inf = NaN.
sed '0,/weight_filler = xavier/s//weight_filler = constant 3e38/' "$work/lenet.ini" >"$work/nan.ini"
expect "NaN loss stops with code 3" 3 "loss became NaN" -- "$train" --config-file="$work/app.ini" net=nan.ini --progress=quiet

# Sizes the machine cannot hold: exit 2 naming the key (and the layer), never bad_alloc.
# A run that diverges writes finite but useless checkpoints before its loss turns NaN: the stop
# names the last checkpoint after which the loss stayed sane (kept as <stem>-sane.ckpt), and that
# one trains on at a normal rate (before: "the last good checkpoint", which held the diverged weights).
diverge=(--config-file="$work/app.ini" epochs=10 solver.base_lr=1 solver.warmup_iters=40 solver.warmup_start_factor=0
         output.checkpoint_every=2 output.dir="$work/diverge" --progress=quiet)
expect "a diverged run names the last sane checkpoint" 3 \
  "loss became NaN .* The loss diverged after the last checkpoint .*checkpoint-sane.ckpt' \(iteration 2\) is the last checkpoint after which the loss stayed sane" -- \
  "$train" "${diverge[@]}"
expect "the last sane checkpoint trains on at a normal rate" 0 "epoch 10/10: train loss 0\.0" -- \
  "$train" "${diverge[@]}" solver.base_lr=0.01 --resume="$work/diverge/checkpoint-sane.ckpt" --progress=lines
expect "a run that diverges from the start says to start over" 3 "diverged after every checkpoint of this run.*start over" -- \
  "$train" "${diverge[@]}" solver.base_lr=20 output.dir="$work/diverge20"
expect "a batch beyond memory names batch_size" 2 "key 'batch_size'.*does not fit in this machine's memory" -- \
  "$train" --config-file="$work/app.ini" batch_size=1000000000 data.train_size=2000000000
# A batch the training set cannot fill is refused before the net takes a batch's memory (it took 11.8 GB and a minute).
expect "a batch beyond the training set is refused before the net is built" 2 \
  "the training set has 64 samples, fewer than workers x batch_size = 1000000$" -- \
  python3 "$src/tests/cli/rss_cap.py" 2000 40 "$train" --config-file="$work/app.ini" batch_size=1000000
sed 's/num_output = 500/num_output = 2000000000/' "$work/lenet.ini" >"$work/huge.ini"
expect "a layer beyond memory names the layer and its line" 2 "huge.ini:[0-9]+: layer 'ip1' \(InnerProduct\).*GiB" -- \
  "$train" --config-file="$work/app.ini" net=huge.ini
expect "prefetch beyond reason names the key" 2 "key 'prefetch'.*at most 256" -- \
  "$train" --config-file="$work/app.ini" data.prefetch=1000000000
# --resume: a folder, a finished run.
expect "resume of a folder says so" 2 "is a folder, not a checkpoint file" -- "$train" --config-file="$work/app.ini" --resume="$work/out"
"$train" --config-file="$work/app.ini" output.checkpoint=done.ckpt --progress=quiet >/dev/null 2>&1
expect "resume of a finished run says it is complete" 2 "already complete" -- "$train" --config-file="$work/app.ini" --resume="$work/out/done.ckpt"
# A checkpoint's position must be one this run can continue from: iteration 2^62 trained on at a learning
# rate of 0 with exit 0; -5 and bytes after the checkpoint were taken; a batch past the epoch's end said "epoch 0".
patch_checkpoint() {  # FROM TO FIELD VALUE: sets iteration, epoch or batch, or appends VALUE bytes; checksum recomputed
  python3 - "$@" <<'PY'
import struct, sys
src, dst, field, value = sys.argv[1:5]
b = open(src, 'rb').read()
p = bytearray(b[16:16 + struct.unpack_from('<Q', b, 8)[0]])
at = 1 + 8 + struct.unpack_from('<Q', p, 1)[0]  # after the endianness byte and the net's name
if field == 'trailing':
    p += bytes(int(value))
else:
    struct.pack_into('<q', p, at + 8 * ['iteration', 'epoch', 'batch'].index(field), int(value))
h = 0xcbf29ce484222325
for c in p:
    h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
open(dst, 'wb').write(b[:8] + struct.pack('<Q', len(p)) + bytes(p) + struct.pack('<Q', h))
PY
}
patch_checkpoint "$work/out/done.ckpt" "$work/out/same.ckpt" trailing 0
expect "a re-framed checkpoint resumes" 0 "resumed from .*epoch 2 batch 0 \(iteration 4\)" -- \
  "$train" --config-file="$work/app.ini" epochs=2 --resume="$work/out/same.ckpt" --progress=quiet
patch_checkpoint "$work/out/done.ckpt" "$work/out/far.ckpt" iteration $((1 << 62))
expect "a checkpoint beyond the run's iterations" 2 "far.ckpt': field 'iteration' is 4611686018427387904, more than the 8 iterations of this whole run" -- \
  "$train" --config-file="$work/app.ini" epochs=2 --resume="$work/out/far.ckpt"
patch_checkpoint "$work/out/done.ckpt" "$work/out/negative.ckpt" iteration -5
expect "a negative iteration" 2 "negative.ckpt' is malformed: field 'iteration' is -5" -- \
  "$train" --config-file="$work/app.ini" epochs=2 --resume="$work/out/negative.ckpt"
patch_checkpoint "$work/out/done.ckpt" "$work/out/trailing.ckpt" trailing 4
expect "bytes after the checkpoint" 2 "trailing.ckpt' is malformed: 4 bytes follow the checkpoint's" -- \
  "$train" --config-file="$work/app.ini" epochs=2 --resume="$work/out/trailing.ckpt"
patch_checkpoint "$work/out/done.ckpt" "$work/out/past.ckpt" batch 50
expect "a batch past the epoch's end, numbered as the log numbers epochs" 2 "past.ckpt': field 'batch' is 50 \(batches done in epoch 2\), but an epoch of this run has 4 batches" -- \
  "$train" --config-file="$work/app.ini" epochs=2 --resume="$work/out/past.ckpt"
# `iterations` with replicas (was: unknown option).
expect "iterations stops 2 workers" 0 '"iterations": 2,' -- bash -c "\"$train\" --config-file=\"$work/app.ini\" workers=2 batch_size=8 iterations=2 --progress=quiet --report=\"$work/ri.json\" >/dev/null 2>&1 && cat \"$work/ri.json\""
# A save killed half way leaves <checkpoint>.tmp.<pid>: the next save removes it.
touch "$work/out/checkpoint.ckpt.tmp.999999999"
expect "a stale temporary checkpoint file is removed at the next save" 0 "^removed$" -- bash -c "\"$train\" --config-file=\"$work/app.ini\" --progress=quiet >/dev/null 2>&1; [[ ! -e \"$work/out/checkpoint.ckpt.tmp.999999999\" ]] && echo removed"

# A NUL inside a value: an error at its line and column (exit 2), also for --dump-config.
printf 'net = lenet.ini\nepochs = 1\0 2\n' >"$work/nul.ini"
expect "a NUL byte in the config is named by line and column" 2 "nul.ini:2, column 11: a control character \(byte 0x00\)" -- \
  "$train" --config-file="$work/nul.ini" --dump-config

# The cluster secret file: only its owner may read it (as ssh insists for a private key).
head -c 32 /dev/urandom | base64 >"$work/open.secret" && chmod 644 "$work/open.secret"
expect "a secret file others can read is refused with the chmod to run" 2 "may be read or written by others \(mode 0644\).*chmod 600" -- \
  "$train" --config-file="$work/app.ini" nodes=2 cluster.secret_file="$work/open.secret" cluster.join_timeout=1
expect "a directory given as the secret file is named as such" 2 "is a directory" -- \
  "$train" --config-file="$work/app.ini" nodes=2 cluster.secret_file="$work" cluster.join_timeout=1
expect "taihu-node refuses an open secret file too" 2 "may be read or written by others" -- \
  "$build/apps/taihu-node" --coordinator=127.0.0.1:1 --secret-file="$work/open.secret" --join-timeout=1

# Dynamic networks: the shipped Tree-LSTM config on a slice of SST, through the
# graph actor runtime, and its bad-input paths.
sst=${TAIHU_DATA_DIR:-$src/../shared/data}/sst
[[ -f $sst/train.txt ]] || sst=$src/../../shared/data/sst
sst=$(realpath -m "$sst")
if [[ -f $sst/train.txt ]]; then
  expect "tree-lstm on SST writes accuracy and trees/s" 0 "test root accuracy" -- "$train" --config-file="$src/config/treelstm-sst.ini" \
    data.dir="$sst" epochs=1 data.limit_train=100 data.limit_dev=50 data.limit_test=50 model.hidden=16 model.embedding=16 \
    output.dir="$work/tl" --report="$work/tl.json" --progress=quiet
  if grep -q '"test_accuracy"' "$work/tl.json" && grep -q '"trees_per_second"' "$work/tl.json"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: tree-lstm report lacks test_accuracy or trees_per_second"
  fi
else
  echo "SKIP: tree-lstm on SST (no SST data at $sst; set TAIHU_DATA_DIR)"
fi
ptb=$(realpath -m "$sst/../ptb")
if [[ -f $ptb/test.txt ]]; then
  expect "lstm language model on PTB reports perplexity" 0 "test perplexity" -- "$train" --config-file="$src/config/lstm-ptb.ini" \
    data.dir="$ptb" epochs=1 data.limit_train=64 data.limit_test=64 data.max_vocabulary=2000 model.hidden=16 model.embedding=16 \
    output.dir="$work/lm" --report="$work/lm.json" --progress=quiet
  if grep -q '"test_perplexity"' "$work/lm.json" && grep -q '"tokens_per_second"' "$work/lm.json"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: lstm report lacks test_perplexity or tokens_per_second"
  fi
  expect "a language model on trees is refused" 2 "language model.*source = ptb" -- "$train" --config-file="$src/config/treelstm-sst.ini" \
    data.dir="$sst" model.type=lstm
else
  echo "SKIP: lstm on PTB (no PTB data at $ptb)"
fi
expect "gated graph network on random DAGs (no data set needed)" 0 "finished: test root accuracy.*graphs/s" -- "$train" \
  --config-file="$src/config/ggnn-dag.ini" epochs=1 data.train_size=200 data.dev_size=50 data.test_size=50 \
  output.dir="$work/gg" --progress=quiet
expect "2 data-parallel replicas train a dynamic model" 0 "finished: test root accuracy.*graphs/s" -- "$train" \
  --config-file="$src/config/ggnn-dag.ini" workers=2 batch_size=10 epochs=1 data.train_size=200 data.dev_size=50 \
  data.test_size=50 output.dir="$work/gg2" output.checkpoint=gg.ckpt --progress=quiet --report="$work/gg2.json"
expect "its report has the tree keys, the buckets and the bytes sent" 0 \
  '"trees_per_second".*"workers": 2,.*"buckets": \[\{"elements".*"bytes_sent_per_iteration": [1-9]' -- \
  bash -c "tr -d '\\n' < '$work/gg2.json'"
expect "2 replicas of a dynamic model resume from their checkpoint" 0 "resumed from.*epoch 2 batch 0" -- "$train" \
  --config-file="$src/config/ggnn-dag.ini" workers=2 batch_size=10 epochs=2 data.train_size=200 data.dev_size=50 \
  data.test_size=50 output.dir="$work/gg3" --resume="$work/gg2/gg.ckpt" --progress=quiet
expect "a diverging dynamic model stops with code 3" 3 "loss became (NaN|infinite)" -- "$train" \
  --config-file="$src/config/ggnn-dag.ini" epochs=1 data.train_size=500 data.dev_size=10 data.test_size=10 \
  solver.type=sgd solver.base_lr=1e30 solver.lr_policy=fixed output.dir="$work/nan" --progress=quiet
expect "missing SST says where the data is" 2 "SST folder .*nowhere.*shared/data" -- "$train" --config-file="$src/config/treelstm-sst.ini" data.dir="$work/nowhere"
# Trees the model cannot take: named at load, by file, line and column (before: at the first step, without either).
mkdir -p "$work/badsst"
printf '(1 (2 a) (3 b))\n(2 (1 c) (-5 d))\n' >"$work/badsst/train.txt"
cp "$work/badsst/train.txt" "$work/badsst/dev.txt"
python3 -c "print('(2 ' + ' '.join(['(1 x)'] * 1000) + ')')" >"$work/badsst/test.txt"
expect "a negative SST label is named at its file, line and column" 2 "badsst/train.txt:2:11: .*label -5 is outside \[0, 5\)" -- \
  "$train" --config-file="$src/config/treelstm-sst.ini" data.dir="$work/badsst"
printf '(1 (2 a) (3 b))\n' >"$work/badsst/train.txt"
cp "$work/badsst/train.txt" "$work/badsst/dev.txt"
expect "a node with 1000 children is named at load for a binary Tree-LSTM" 2 "badsst/test.txt:1:1: .*1000 children; model 'tree_lstm' takes at most 2" -- \
  "$train" --config-file="$src/config/treelstm-sst.ini" data.dir="$work/badsst"
expect "source = memory without graphs says where they come from" 2 "source.*memory takes graphs handed over.*taihu.GraphData" -- \
  "$train" --config-file="$src/config/ggnn-dag.ini" data.source=memory
expect "unknown model type lists the known ones" 2 "unknown model 'treelstm'.*tree_lstm" -- "$train" --config-file="$src/config/treelstm-sst.ini" model.type=treelstm data.dir="$work/nowhere"

# SIGTERM (or Ctrl-C) stops after the iteration in flight with a checkpoint
# where the run stands; resumed from it, the run ends exactly where an
# uninterrupted one does, wherever the signal fell.
stop_run=("$train" --config-file="$work/app.ini" data.train_size=16000 display=10 --progress=quiet)
"${stop_run[@]}" output.dir="$work/whole" --report="$work/whole.json" >/dev/null 2>&1
"${stop_run[@]}" output.dir="$work/stop" --report="$work/stop.json" >"$work/stop.log" 2>&1 &
stopped_pid=$!
for _ in $(seq 200); do [[ -s "$work/stop/metrics.jsonl" ]] && break; sleep 0.05; done
kill -TERM "$stopped_pid"
wait "$stopped_pid"
stop_rc=$?
expect "SIGTERM stops with 128 + 15 and says where to resume" 143 "stopped at iteration [1-9][0-9]*.*resume from" -- \
  bash -c "cat '$work/stop.log'; exit $stop_rc"
expect "the stopped run's report says so" 0 '"stopped": true' -- cat "$work/stop.json"
expect "the stopped run resumes mid-epoch" 0 "resumed from .*epoch 1 batch [1-9]" -- "${stop_run[@]}" \
  output.dir="$work/stop" --resume="$work/stop/checkpoint.ckpt" --report="$work/resumed.json"
expect "and ends where the uninterrupted run ends, bit for bit" 0 "^same$" -- python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
keys = ['train_loss', 'test_loss', 'test_accuracy']
print('same' if all(a[k] == b[k] for k in keys) else [(k, a[k], b[k]) for k in keys])" "$work/whole.json" "$work/resumed.json"
expect "--evaluate scores a checkpoint's weights as the run did" 0 "^same$" -- bash -c "
'$train' --config-file='$work/app.ini' output.dir='$work/whole' --evaluate --resume='$work/whole/checkpoint.ckpt' \
  --progress=quiet --report='$work/eval.json' >/dev/null 2>&1 &&
python3 -c \"
import json
r, e = json.load(open('$work/whole.json')), json.load(open('$work/eval.json'))
print('same' if (r['test_loss'], r['test_accuracy']) == (e['test']['loss'], e['test']['accuracy']) else (r, e))\""

echo "cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
