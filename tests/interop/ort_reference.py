"""ONNX Runtime as the tests' reference for ONNX files: the npm package onnxruntime-node (its
CPU build ships inside the package), driven from Node.js by onnxruntime_run.js, so that no
Python package beyond Debian's is needed.

The package is looked for in $TAIHU_ONNXRUNTIME_NODE/node_modules, by default
BUILD_DIR/onnxruntime-node (where `bash scripts/quickstart.sh test` installs it).
"""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, 'onnxruntime_run.js')
NODE = shutil.which('node') or shutil.which('nodejs')


def package_dir(build):
    return os.environ.get('TAIHU_ONNXRUNTIME_NODE', os.path.join(build, 'onnxruntime-node'))


def missing(build):
    """Why ONNX Runtime cannot run here (a skip reason), or None."""
    where = package_dir(build)
    if NODE is not None and os.path.isdir(os.path.join(where, 'node_modules', 'onnxruntime-node')):
        return None
    return ('ONNX Runtime is not installed: needs node (Debian: nodejs) and `npm install --ignore-scripts '
            f'--prefix {where} onnxruntime-node` (scripts/quickstart.sh test does both)')


def run(build, work, model_path, inputs, env=None):
    """The model's outputs in ONNX Runtime, by name, for float32 inputs by name."""
    io = tempfile.mkdtemp(prefix='ort-', dir=work)
    manifest = []
    for k, (name, array) in enumerate(inputs.items()):
        file = f'input-{k}.bin'
        np.ascontiguousarray(array, dtype='<f4').tofile(os.path.join(io, file))
        manifest.append({'name': name, 'dims': list(array.shape), 'file': file})
    with open(os.path.join(io, 'inputs.json'), 'w') as f:
        json.dump(manifest, f)
    env = dict(env or os.environ, NODE_PATH=os.path.join(package_dir(build), 'node_modules'))
    subprocess.run([NODE, SCRIPT, model_path, io], check=True, env=env)
    with open(os.path.join(io, 'outputs.json')) as f:
        outputs = {o['name']: np.fromfile(os.path.join(io, o['file']), dtype='<f4').reshape(o['dims'])
                   for o in json.load(f)}
    shutil.rmtree(io)
    return outputs


def sample_inputs(sample):
    """The inputs of an export's --sample archive (numpy.load), by name."""
    return {k[len('input.'):]: sample[k] for k in sample.files if k.startswith('input.')}


def assert_taihus_outputs(test, outputs, sample):
    """Outputs by name against an export's --sample archive: every output there, each within
    relative 1e-4 of the largest."""
    test.assertEqual(sorted(outputs), sorted(k[len('output.'):] for k in sample.files if k.startswith('output.')))
    for name, out in outputs.items():
        expected = sample['output.' + name]
        test.assertEqual(out.shape, expected.shape, name)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max(), err_msg=name)
