// Runs an ONNX model in ONNX Runtime (the npm package onnxruntime-node, whose CPU
// build ships inside the package) for tests/interop/test_export.py, which keeps
// Python free of a second ONNX runtime: the test writes the inputs, this script
// runs the model once and writes its outputs.
//
//   node onnxruntime_run.js MODEL.onnx DIR
//
// DIR/inputs.json lists [{"name", "dims", "file"}], each file the tensor's float32
// values, little-endian, row-major; the script writes every graph output as
// DIR/output-K.bin and DIR/outputs.json in the same form. Single-threaded and
// with every graph optimisation on, as a user deploying the model would run it.
// Exits 2 with one line when the package is missing (the test then skips).
'use strict';
const fs = require('fs');
const path = require('path');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error(`onnxruntime-node is not installed (${e.code || e.message}): ` +
                'npm install --ignore-scripts --prefix DIR onnxruntime-node, then NODE_PATH=DIR/node_modules');
  process.exit(2);
}

function readFloats(file) {
  const bytes = fs.readFileSync(file);
  // A copy: a Buffer may sit at an offset a Float32Array cannot start at.
  return new Float32Array(new Uint8Array(bytes).buffer);
}

async function main() {
  const [model, dir] = process.argv.slice(2);
  if (!model || !dir) {
    console.error('usage: node onnxruntime_run.js MODEL.onnx DIR');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const input of JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'))) {
    const data = readFloats(path.join(dir, input.file));
    const count = input.dims.reduce((a, b) => a * b, 1);
    if (data.length !== count) throw new Error(`input ${input.name}: ${data.length} values for dims ${input.dims}`);
    feeds[input.name] = new ort.Tensor('float32', data, input.dims);
  }
  const results = await session.run(feeds);
  const outputs = session.outputNames.map((name, k) => {
    const tensor = results[name];
    if (tensor.type !== 'float32') throw new Error(`output ${name} is ${tensor.type}, not float32`);
    const file = `output-${k}.bin`;
    fs.writeFileSync(path.join(dir, file), Buffer.from(tensor.data.buffer, tensor.data.byteOffset,
                                                       tensor.data.byteLength));
    return {name, dims: tensor.dims.map(Number), file};
  });
  fs.writeFileSync(path.join(dir, 'outputs.json'), JSON.stringify(outputs));
}

main().catch((e) => {
  console.error(`onnxruntime: ${e.message}`);
  process.exit(1);
});
