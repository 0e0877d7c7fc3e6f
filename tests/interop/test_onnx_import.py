"""taihu-convert onnx with models from PyTorch (ctest onnx_import; all of it in onnx_import_slow):

  - torchvision's AlexNet, ResNet-50 and GoogLeNet (random weights), exported by torch.onnx.export
    as users export them (opset 13, eval mode: BatchNorm folded into the convolutions), import, and
    the imported nets give PyTorch's outputs on the same input (relative 1e-4 of the largest);
  - a ResNet-50 exported with its BatchNorm layers kept imports, and fine-tunes from its
    checkpoint on a folder of JPEGs with config/resnet50-imagenet.ini, its loss falling;
  - taihu.import_onnx (Python) writes what taihu-convert writes.
The quick entry runs AlexNet only. Skipped where torch or torchvision is missing
(Debian: python3-torch, python3-torchvision). (taihu's own nets round trip through ONNX bit for bit
in the core tests: tests/interop/test_onnx_import.cpp.)

    usage: test_onnx_import.py BUILD_DIR SOURCE_DIR
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
APPS = os.path.join(BUILD, 'apps')
ENV = dict(os.environ, OPENBLAS_NUM_THREADS='1')
try:
    import numpy as np
    import torch
    import torchvision
except ImportError:
    torch = None
QUICK = bool(os.environ.get('TAIHU_ONNX_QUICK'))


def run(*args):
    subprocess.run([str(a) for a in args], check=True, env=ENV)


def torchvision_model(name):
    torch.manual_seed(0)
    models = torchvision.models
    if name == 'googlenet':
        return models.googlenet(aux_logits=False, init_weights=True).eval()
    return getattr(models, name)().eval()


def export(model, path, keep_batch_norm=False):
    """As a user exports for deployment: opset 13, a symbolic batch axis."""
    extra = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False) if keep_batch_norm else {}
    torch.onnx.export(model, torch.zeros(1, 3, 224, 224), path, opset_version=13, input_names=['input'],
                      output_names=['logits'], dynamic_axes={'input': {0: 'N'}, 'logits': {0: 'N'}}, **extra)


def import_onnx(model_path, out_dir):
    run(os.path.join(APPS, 'taihu-convert'), 'onnx', model_path, '--out=' + out_dir, '--log-level=warn')
    [config] = glob.glob(os.path.join(out_dir, '*.ini'))
    [checkpoint] = glob.glob(os.path.join(out_dir, '*.ckpt'))
    return config, checkpoint


@unittest.skipIf(torch is None, 'torch or torchvision is not installed (python3-torch, python3-torchvision)')
class OnnxImportTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory(prefix='taihu-onnx-import-')
        self.work = self.scratch.name

    def tearDown(self):
        self.scratch.cleanup()

    def test_torchvision_models_give_pytorchs_outputs(self):
        for name in ['alexnet'] if QUICK else ['alexnet', 'resnet50', 'googlenet']:
            with self.subTest(model=name):
                model = torchvision_model(name)
                path = os.path.join(self.work, name + '.onnx')
                export(model, path)
                config, checkpoint = import_onnx(path, os.path.join(self.work, name))
                # The imported net run by taihu on export's fixed input (2 samples), then PyTorch on it.
                sample = os.path.join(self.work, name + '-sample.npz')
                run(os.path.join(APPS, 'taihu-convert'), 'export', checkpoint, '--net=' + config, '--format=npz',
                    '--out=' + os.path.join(self.work, name + '.npz'), '--sample=' + sample, '--log-level=warn')
                s = np.load(sample)
                with torch.no_grad():
                    expected = model(torch.from_numpy(s['input.data'])).numpy()
                self.assertEqual(s['output.logits'].shape, expected.shape)
                np.testing.assert_allclose(s['output.logits'], expected, rtol=1e-4,
                                           atol=1e-4 * np.abs(expected).max())

    @unittest.skipIf(QUICK, 'the quick entry imports AlexNet only')
    def test_imported_resnet50_fine_tunes_on_an_image_folder(self):
        path = os.path.join(self.work, 'resnet50.onnx')
        export(torchvision_model('resnet50'), path, keep_batch_norm=True)
        config, checkpoint = import_onnx(path, os.path.join(self.work, 'imported'))
        with open(config) as f:
            self.assertIn('type = BatchNorm', f.read())
        images = os.path.join(self.work, 'images')
        run(os.path.join(BUILD, 'tests', 'taihu_make_images'), images, 4, 2)
        out = os.path.join(self.work, 'run')
        recipe = os.path.join(SOURCE, 'config', 'resnet50-imagenet.ini')
        run(os.path.join(APPS, 'taihu-train'), '--config-file=' + recipe,
            'net=' + config, '--resume=' + checkpoint, 'data.train=' + images, 'data.test=' + images,
            'batch_size=4', 'test_batch_size=4', 'iterations=12', 'display=1', 'data.decoders=1',
            'solver.base_lr=0.001', 'solver.warmup_iters=0', 'output.dir=' + out, 'output.checkpoint=',
            '--progress=quiet', '--log-level=warn')
        with open(os.path.join(out, 'metrics.jsonl')) as f:
            losses = [r['loss'] for r in map(json.loads, f) if r.get('type') == 'train']
        self.assertEqual(len(losses), 12, losses)
        # Eight images of four classes seen six times each, from 1000 untrained classes (ln 1000 =
        # 6.9): the last two passes' loss is below half the first pass's (here 7.1 -> 1.7).
        self.assertLess(sum(losses[-4:]) / 4, 0.5 * sum(losses[:2]) / 2, losses)

    @unittest.skipIf(QUICK, 'the quick entry imports AlexNet only')
    def test_python_import_onnx_writes_what_the_app_writes(self):
        if os.environ.get('TAIHU_SANITIZED'):
            self.skipTest('an instrumented module does not load into this python (ctest python checks it instead)')
        sys.path.insert(0, os.path.join(BUILD, 'python'))
        try:
            import taihu
        except ImportError as e:
            self.skipTest(f'the Python module is not built: {e}')
        path = os.path.join(self.work, 'alexnet.onnx')
        export(torchvision_model('alexnet'), path)
        files = taihu.import_onnx(path, os.path.join(self.work, 'py'))
        config, checkpoint = import_onnx(path, os.path.join(self.work, 'app'))
        with open(files['config']) as a, open(config) as b:
            self.assertEqual(a.read(), b.read())
        ours, theirs = taihu.load_checkpoint(files['checkpoint']), taihu.load_checkpoint(checkpoint)
        self.assertEqual(sorted(ours['params']), sorted(theirs['params']))
        for k, v in ours['params'].items():
            np.testing.assert_array_equal(v, theirs['params'][k])
        with self.assertRaises(taihu.ConfigError):
            taihu.import_onnx(config, os.path.join(self.work, 'bad'))  # a config file is no ONNX model


if __name__ == '__main__':
    unittest.main(argv=sys.argv[:1], verbosity=2)
