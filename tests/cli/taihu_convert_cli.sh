#!/usr/bin/env bash
# End-to-end checks of taihu-convert: a Caffe-style prototxt with Data layers
# and a caffemodel (encoded here by protoc from text) convert to a net config
# and checkpoint that taihu-train resumes from; bad input exits 2 naming what
# is wrong.
#   usage: taihu_convert_cli.sh BUILD_DIR SOURCE_DIR PROTOC
set -uo pipefail
build=$1
src=$2
protoc=$3
convert="$build/apps/taihu-convert"
train="$build/apps/taihu-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

# As Caffe's examples write nets: one Data layer per phase, in-place ReLU,
# accuracy in the test phase only.
cat >"$work/tiny.prototxt" <<'NET'
name: "tiny"
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        transform_param { scale: 0.00390625 } data_param { source: "train_lmdb" batch_size: 64 backend: LMDB } }
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TEST }
        transform_param { scale: 0.00390625 } data_param { source: "test_lmdb" batch_size: 100 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        param { lr_mult: 1 } param { lr_mult: 2 }
        convolution_param { num_output: 2 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 3 } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
NET

# Weights as text (protobuf's text format of interop/caffe/caffe.proto's
# CaffeWeights), encoded to a binary caffemodel by protoc.
weights_text() {  # conv1 weight dims (4 numbers)
  python3 - "$@" <<'PY'
import math, sys
dims = [int(d) for d in sys.argv[1:5]]
def blob(shape, seed):
    n = math.prod(shape)
    values = " ".join(f"data: {math.sin(0.3 * i + seed):.6f}" for i in range(n))
    return "blobs { shape { " + " ".join(f"dim: {d}" for d in shape) + " } " + values + " }"
print('name: "tiny"')
print('layer { name: "conv1" type: "Convolution" ' + blob(dims, 1) + " " + blob([2], 2) + " }")
print('layer { name: "ip" type: "InnerProduct" ' + blob([3, 72], 3) + " " + blob([3], 4) + " }")
PY
}
weights_text 2 1 3 3 | "$protoc" --encode=taihu.caffe.CaffeWeights -I "$src/interop" caffe/caffe.proto >"$work/tiny.caffemodel"
weights_text 2 1 5 5 | "$protoc" --encode=taihu.caffe.CaffeWeights -I "$src/interop" caffe/caffe.proto >"$work/wrong.caffemodel"

expect "help" 0 "usage: taihu-convert" -- "$convert" --help
expect "converts net and weights" 0 "weights of 4 parameter blobs" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/tiny.caffemodel" --out="$work/out" --input-shape=data=1,8,8
expect "notes what is not carried" 0 "not carried over" -- \
  "$convert" caffe "$work/tiny.prototxt" --out="$work/out" --input-shape=data=1,8,8
expect "net config written" 0 "bias_lr_mult = 2" -- cat "$work/out/tiny.ini"
expect "test-only layer" 0 "phase = test" -- cat "$work/out/tiny.ini"

cat >"$work/app.ini" <<INI
net = out/tiny.ini
epochs = 1
batch_size = 8
test_batch_size = 16
[data]
source = synthetic
shape = 1 8 8
classes = 3
train_size = 32
test_size = 16
[solver]
type = sgd
base_lr = 0.01
momentum = 0.9
[output]
dir = $work/run
INI
expect "taihu-train resumes from the imported weights" 0 "test accuracy" -- \
  "$train" --config-file="$work/app.ini" --resume="$work/out/tiny.ckpt" --progress=lines
expect "and names them in its log" 0 "resumed from '.*tiny.ckpt': epoch 1 batch 0 \(iteration 0\)" -- \
  "$train" --config-file="$work/app.ini" --resume="$work/out/tiny.ckpt" --progress=lines

expect "export npz" 0 "tiny.npz" -- \
  "$convert" export "$work/run/checkpoint.ckpt" --net="$work/out/tiny.ini" --format=npz --out="$work/tiny.npz"
expect "npz is a zip of .npy files" 0 "conv1.weight.npy" -- cat "$work/tiny.npz"
expect "export onnx with a sample run" 0 "sample inputs and outputs" -- \
  "$convert" export "$work/run/checkpoint.ckpt" --net="$work/out/tiny.ini" --format=onnx --out="$work/tiny.onnx" \
  --sample="$work/sample.npz"
expect "the onnx export imports again" 0 "net 'tiny': .* learnable parameters -> .*tiny.ini" -- \
  "$convert" onnx "$work/tiny.onnx" --out="$work/onnx-in"
expect "and the imported net trains" 0 "type = SoftmaxWithLoss" -- cat "$work/onnx-in/tiny.ini"
expect "onnx import of no model" 2 "not an ONNX model" -- "$convert" onnx "$work/out/tiny.ini" --out="$work/onnx-bad"
head -c $(($(stat -c %s "$work/tiny.onnx") / 2)) "$work/tiny.onnx" >"$work/half.onnx"
expect "onnx import of half a model" 2 "half.onnx: (not an ONNX model|.*needs? [0-9]+ values|.*not computed)" -- \
  "$convert" onnx "$work/half.onnx" --out="$work/onnx-bad"
expect "and it leaves nothing" 2 "No such file" -- ls "$work/onnx-bad"
expect "export against another net" 2 "has 4 parameter blobs, net 'lenet' .* has 8: not a checkpoint of this net" -- \
  "$convert" export "$work/run/checkpoint.ckpt" --net="$src/config/nets/lenet.ini" --format=npz --out="$work/x.npz"
expect "export format" 2 "--format=tflite: expected npz or onnx" -- \
  "$convert" export "$work/run/checkpoint.ckpt" --net="$work/out/tiny.ini" --format=tflite --out="$work/x"
expect "export of no checkpoint" 2 "cannot open checkpoint" -- \
  "$convert" export "$work/none.ckpt" --net="$work/out/tiny.ini" --format=npz --out="$work/x.npz"

# Bad input: exit 2, the message names the problem.
head -c 200 "$work/tiny.caffemodel" >"$work/cut.caffemodel"
expect "truncated weights" 2 "cut.caffemodel' is not a Caffe weights file .*truncated" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/cut.caffemodel" --out="$work/bad" --input-shape=data=1,8,8
expect "foreign weights" 2 "is not a Caffe weights file|holds no layers" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/app.ini" --out="$work/bad" --input-shape=data=1,8,8
expect "weights of the wrong shape" 2 "layer 'conv1' \(Convolution\): parameter 'weight' \(blob 0\): the weights file has shape 2x1x5x5, the net expects 2x1x3x3" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/wrong.caffemodel" --out="$work/bad" --input-shape=data=1,8,8
sed 's/num_output: 3/num_output 3/' "$work/tiny.prototxt" >"$work/syntax.prototxt"
expect "syntax error: line and column" 2 "syntax.prototxt:10:[0-9]+: Expected \":\"" -- \
  "$convert" caffe "$work/syntax.prototxt" --out="$work/bad" --input-shape=data=1,8,8
expect "data layers need a shape" 2 "layer 'mnist' \(Data\).*--input-shape=data=" -- \
  "$convert" caffe "$work/tiny.prototxt" --out="$work/bad"
sed 's/type: "ReLU"/type: "PReLU"/' "$work/tiny.prototxt" >"$work/prelu.prototxt"
expect "a real Caffe field taihu lacks" 2 "field 'phase' of LayerParameter is not supported" -- \
  "$convert" caffe <(sed 's/top: "conv1" }/top: "conv1" phase: TRAIN }/' "$work/tiny.prototxt") --out="$work/bad" --input-shape=data=1,8,8
expect "unsupported layer type" 2 "prelu.prototxt:9: layer 'relu1' \(PReLU\): layer type 'PReLU' is not supported" -- \
  "$convert" caffe "$work/prelu.prototxt" --out="$work/bad" --input-shape=data=1,8,8
echo 'layers { name: "conv1" type: CONVOLUTION }' >"$work/v1.prototxt"
expect "legacy V1 nets" 2 "upgrade_net_proto_text" -- "$convert" caffe "$work/v1.prototxt" --out="$work/bad"
expect "missing prototxt" 2 "cannot open Caffe net" -- "$convert" caffe "$work/none.prototxt" --out="$work/bad"
expect "unknown command" 2 "unknown command 'tensorflow'" -- "$convert" tensorflow x --out="$work/bad"
expect "nothing written on failure" 1 "" -- test -e "$work/bad/tiny.ini"
# A net's name is not trusted as a path: "../escape" must not write beside --out.
sed 's|name: "tiny"|name: "../escape"|' "$work/tiny.prototxt" >"$work/named.prototxt"
expect "a net name that is a path" 0 "not a plain file name: the outputs are named 'named'" -- \
  "$convert" caffe "$work/named.prototxt" --out="$work/named" --input-shape=data=1,8,8
expect "is written inside --out" 0 "" -- test -e "$work/named/named.ini"
expect "and nowhere else" 1 "" -- test -e "$work/escape.ini"

# Translating needs the shapes, not the blobs: a declared input of 10^9 values
# per sample (which allocated 14 GB and ran over a minute) takes the memory of
# the parameters alone, under a second.
cat >"$work/huge.prototxt" <<'NET'
name: "huge"
input: "data"
input_shape { dim: 1 dim: 1000 dim: 1000 dim: 1000 }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 4 kernel_size: 3 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "sum" type: "Eltwise" bottom: "pool1" bottom: "pool1" top: "sum" eltwise_param { operation: MAX } }
NET
expect "a huge declared input translates in little memory and time" 0 "net 'huge': 5 layers, 36004 learnable parameters" -- \
  python3 "$src/tests/cli/rss_cap.py" 1500 20 "$convert" caffe "$work/huge.prototxt" --out="$work/huge"

# Weights that are NaN or infinite (a diverged run's) are refused, naming the layer and the blob.
weights_text 2 1 3 3 | sed '0,/data: [-0-9.]*/s//data: nan/' |
  "$protoc" --encode=taihu.caffe.CaffeWeights -I "$src/interop" caffe/caffe.proto >"$work/nan.caffemodel"
expect "NaN weights" 2 "nan.caffemodel: layer 'conv1' \(Convolution\): parameter 'weight' \(blob 0\): 1 of its 18 values are not finite \(value 0 is NaN\)" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/nan.caffemodel" --out="$work/bad" --input-shape=data=1,8,8
weights_text 2 1 3 3 | sed 's/data: [-0-9.]* } }/data: -inf } }/' |
  "$protoc" --encode=taihu.caffe.CaffeWeights -I "$src/interop" caffe/caffe.proto >"$work/inf.caffemodel"
expect "infinite weights" 2 "layer 'conv1' \(Convolution\): parameter 'bias' \(blob 1\): 1 of its 2 values are not finite \(value 1 is infinite\)" -- \
  "$convert" caffe "$work/tiny.prototxt" "$work/inf.caffemodel" --out="$work/bad" --input-shape=data=1,8,8

expect "caffe-export" 0 "resnet50.prototxt" -- "$convert" caffe-export "$src/config/nets/resnet50.ini" --out="$work/resnet50.prototxt"
expect "and back" 0 "25557032 learnable parameters" -- "$convert" caffe "$work/resnet50.prototxt" --out="$work/out"

echo "taihu-convert cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
