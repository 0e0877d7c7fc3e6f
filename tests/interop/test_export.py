"""taihu-convert export, checked by the frameworks that read its files (ctest `export_python`).

A net trained briefly by taihu-train is exported as NPZ and ONNX:
  - the NPZ loads (numpy.load) into the same net written in PyTorch, whose
    outputs equal taihu's on the export's sample input (--sample);
  - the ONNX models run in ONNX Runtime (the npm package onnxruntime-node,
    driven from Node.js by onnxruntime_run.js) and give taihu's outputs;
  - they pass onnx.checker with shape inference, their outputs have the
    shapes taihu computes, and evaluated operator by operator with PyTorch's
    functions (a second opinion on every attribute) they give taihu's outputs.
Each part is skipped when its package (numpy, torch, onnx; node and
onnxruntime-node, see ort_reference.py) is missing.

    usage: test_export.py BUILD_DIR SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile
import unittest

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
CONVERT = os.path.join(BUILD, 'apps', 'taihu-convert')
TRAIN = os.path.join(BUILD, 'apps', 'taihu-train')

try:
    import numpy as np
    import ort_reference
except ImportError:
    np = None
try:
    import torch
except ImportError:
    torch = None
try:
    import onnx
except ImportError:
    onnx = None

ENV = dict(os.environ, OPENBLAS_NUM_THREADS='1')
ORT_MISSING = ort_reference.missing(BUILD) if np is not None else 'numpy is not installed'

# Every net the export promises; TAIHU_EXPORT_QUICK (ctest export_python) keeps the first two,
# the slow entry runs all.
NETS = [('lenet', '1 28 28', 10), ('lenet-bn', '1 28 28', 10), ('alexnet', '3 227 227', 1000),
        ('alexnet-bn', '3 227 227', 1000), ('vgg16', '3 224 224', 1000), ('googlenet', '3 224 224', 1000),
        ('resnet50', '3 224 224', 1000)]
if os.environ.get('TAIHU_EXPORT_QUICK'):
    NETS = NETS[:2]


def train_briefly(work, net, sample_shape, classes):
    """One iteration of taihu-train on synthetic data: a checkpoint of `net`."""
    out = os.path.join(work, net)
    app = os.path.join(work, net + '-app.ini')
    with open(app, 'w') as f:
        f.write(f"""net = {os.path.join(SOURCE, 'config', 'nets', net + '.ini')}
epochs = 1
iterations = 1
batch_size = 2
test_batch_size = 2
[data]
source = synthetic
shape = {sample_shape}
classes = {classes}
train_size = 2
test_size = 2
[solver]
type = sgd
base_lr = 0.01
[output]
dir = {out}
""")
    subprocess.run([TRAIN, '--config-file=' + app, '--progress=quiet', '--log-level=warn'], check=True, env=ENV)
    return os.path.join(out, 'checkpoint.ckpt')


def export(work, checkpoint, net, fmt):
    path = os.path.join(work, f'{net}.{fmt}')
    sample = os.path.join(work, f'{net}-sample.npz')
    subprocess.run([CONVERT, 'export', checkpoint, '--net=' + os.path.join(SOURCE, 'config', 'nets', net + '.ini'),
                    '--format=' + fmt, '--out=' + path, '--sample=' + sample, '--log-level=warn'],
                   check=True, env=ENV)
    return path, sample


def lenet(bn):
    """config/nets/lenet.ini and lenet-bn.ini as PyTorch modules, named as the export names them."""
    nn = torch.nn

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            if bn:
                self.conv1 = nn.Conv2d(1, 32, 5, padding=2, bias=False)
                self.conv1_bn = nn.BatchNorm2d(32)
                self.conv2 = nn.Conv2d(32, 64, 5, padding=2, bias=False)
                self.conv2_bn = nn.BatchNorm2d(64)
                self.ip1 = nn.Linear(64 * 7 * 7, 512)
                self.ip2 = nn.Linear(512, 10)
            else:
                self.conv1 = nn.Conv2d(1, 20, 5)
                self.conv2 = nn.Conv2d(20, 50, 5)
                self.ip1 = nn.Linear(50 * 4 * 4, 500)
                self.ip2 = nn.Linear(500, 10)

        def forward(self, x):
            pool = torch.nn.functional.max_pool2d
            relu = torch.relu
            if bn:
                x = pool(relu(self.conv1_bn(self.conv1(x))), 2)
                x = pool(relu(self.conv2_bn(self.conv2(x))), 2)
            else:
                x = pool(self.conv1(x), 2)
                x = pool(self.conv2(x), 2)
            return self.ip2(relu(self.ip1(x.flatten(1))))

    return LeNet()


def run_onnx(model, inputs):
    """Evaluates the ONNX graph with PyTorch's functions, operator by operator: onnx 1.12 has no
    reference evaluator, and this checks the meaning of every attribute taihu writes."""
    from onnx import helper, numpy_helper
    from functools import reduce
    F = torch.nn.functional
    values = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    values.update({name: torch.from_numpy(array) for name, array in inputs.items()})
    for node in model.graph.node:
        a = {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
        x = [values[name] for name in node.input]
        op = node.op_type
        if op == 'Conv':
            y = F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, stride=a['strides'],
                         padding=tuple(a['pads'][:2]), dilation=a['dilations'], groups=a['group'])
        elif op in ('MaxPool', 'AveragePool'):
            window = dict(kernel_size=a['kernel_shape'], stride=a['strides'], padding=tuple(a['pads'][:2]),
                          ceil_mode=bool(a.get('ceil_mode', 0)))
            y = (F.max_pool2d(x[0], **window) if op == 'MaxPool' else
                 F.avg_pool2d(x[0], count_include_pad=bool(a.get('count_include_pad', 0)), **window))
        elif op == 'GlobalAveragePool':
            y = x[0].mean((2, 3), keepdim=True)
        elif op == 'GlobalMaxPool':
            y = x[0].amax((2, 3), keepdim=True)
        elif op == 'Gemm':
            y = x[0] @ (x[1].T if a.get('transB') else x[1]) + (x[2] if len(x) > 2 else 0)
        elif op == 'Flatten':
            y = x[0].reshape(int(np.prod(x[0].shape[:a.get('axis', 1)])), -1)
        elif op == 'Reshape':
            shape = [x[0].shape[i] if d == 0 else int(d) for i, d in enumerate(x[1].tolist())]
            y = x[0].reshape(shape)
        elif op == 'BatchNormalization':
            y = F.batch_norm(x[0], x[3], x[4], x[1], x[2], training=False, eps=a.get('epsilon', 1e-5))
        elif op == 'LRN':
            y = F.local_response_norm(x[0], a['size'], a['alpha'], a['beta'], a['bias'])
        elif op == 'Softmax':
            y = F.softmax(x[0], a.get('axis', -1))
        elif op in ('Relu', 'Sigmoid', 'Tanh'):
            y = {'Relu': torch.relu, 'Sigmoid': torch.sigmoid, 'Tanh': torch.tanh}[op](x[0])
        elif op == 'LeakyRelu':
            y = F.leaky_relu(x[0], a['alpha'])
        elif op in ('Mul', 'Add', 'Sum', 'Max', 'Concat'):
            y = (torch.cat(x, a['axis']) if op == 'Concat' else
                 reduce({'Mul': torch.mul, 'Add': torch.add, 'Sum': torch.add, 'Max': torch.maximum}[op], x))
        else:
            raise AssertionError(f'operator {op} is not known to this test')
        values[node.output[0]] = y
    return {output.name: values[output.name].numpy() for output in model.graph.output}


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix='taihu-export-')  # VGG-16's files: ~1 GB
        cls.work = cls.scratch.name
        cls.onnx_exports = {}  # each net is trained and exported once for both ONNX tests

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    @unittest.skipIf(np is None or torch is None, 'numpy or torch is not installed')
    def test_npz_in_pytorch_gives_taihus_outputs(self):
        for net, bn in (('lenet', False), ('lenet-bn', True)):
            with self.subTest(net=net):
                checkpoint = train_briefly(self.work, net, '1 28 28', 10)
                path, sample = export(self.work, checkpoint, net, 'npz')
                weights = np.load(path)
                model = lenet(bn).eval()
                state = {k: torch.from_numpy(weights[k]) for k in weights.files}
                missing, unexpected = model.load_state_dict(state, strict=False)
                self.assertEqual(unexpected, [])
                self.assertEqual([m for m in missing if not m.endswith('num_batches_tracked')], [])
                run = np.load(sample)
                with torch.no_grad():
                    out = model(torch.from_numpy(run['input.data'])).numpy()
                expected = run['output.ip2']
                self.assertEqual(out.shape, expected.shape)
                np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())

    def export_onnx(self, net, shape, classes):
        if net not in self.onnx_exports:
            checkpoint = train_briefly(self.work, net, shape, classes)
            self.onnx_exports[net] = export(self.work, checkpoint, net, 'onnx')
        return self.onnx_exports[net]

    @unittest.skipIf(ORT_MISSING, ORT_MISSING)
    def test_onnx_in_onnxruntime_gives_taihus_outputs(self):
        for net, shape, classes in NETS:
            with self.subTest(net=net):
                path, sample = self.export_onnx(net, shape, classes)
                run = np.load(sample)
                outputs = ort_reference.run(BUILD, self.work, path, ort_reference.sample_inputs(run), ENV)
                ort_reference.assert_taihus_outputs(self, outputs, run)

    @unittest.skipIf(np is None or onnx is None, 'numpy or onnx is not installed')
    def test_onnx_passes_the_checker_and_gives_taihus_outputs(self):
        for net, shape, classes in NETS:
            with self.subTest(net=net):
                path, sample = self.export_onnx(net, shape, classes)
                model = onnx.load(path)
                onnx.checker.check_model(model, full_check=True)
                inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
                run = np.load(sample)
                for output in inferred.graph.output:
                    dims = [d.dim_value for d in output.type.tensor_type.shape.dim[1:]]
                    self.assertEqual(dims, list(run['output.' + output.name].shape[1:]))
                if torch is None:
                    continue
                inputs = {i.name: run['input.' + i.name] for i in model.graph.input}
                with torch.no_grad():
                    outputs = run_onnx(model, inputs)
                ort_reference.assert_taihus_outputs(self, outputs, run)


if __name__ == '__main__':
    unittest.main(argv=sys.argv[:1], verbosity=2)
