"""The shipped ImageNet-style configs, end to end (ctest `image_configs`), as the README's walk-through
"From a folder of JPEGs to an ONNX file" runs them:

  1. a folder of class folders of JPEGs (generated: tests/tools/make_images.cpp) and LMDB databases
     made from it by `taihu-convert imageset --encoded`;
  2. every config/*-imagenet*.ini trains a few iterations on them as shipped, only the paths, the
     batch and the run's length overridden: every sample is read (none skipped), the losses are
     finite, a checkpoint is written;
  3. each checkpoint exports to ONNX, and ONNX Runtime gives taihu's outputs on the export's sample
     (skipped with one line where ONNX Runtime is missing; see ort_reference.py).

    usage: test_image_configs.py BUILD_DIR SOURCE_DIR
"""
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

BUILD, SOURCE = (os.path.abspath(p) for p in sys.argv[1:3])
APPS = os.path.join(BUILD, 'apps')
try:
    import numpy as np
    import ort_reference
    ORT_MISSING = ort_reference.missing(BUILD)
except ImportError:
    np = None
    ORT_MISSING = 'numpy is not installed'
ENV = dict(os.environ, OPENBLAS_NUM_THREADS='1')
CONFIGS = sorted(glob.glob(os.path.join(SOURCE, 'config', '*-imagenet*.ini')))
CLASSES, TRAIN_PER_CLASS, TEST_PER_CLASS = 4, 4, 1


def run(*args):
    subprocess.run([str(a) for a in args], check=True, env=ENV)


def net_of(config):
    """The net file a config names (relative to the config)."""
    with open(config) as f:
        for line in f:
            key, _, value = line.partition('=')
            if key.strip() == 'net':
                return os.path.join(os.path.dirname(config), value.split('#')[0].strip())
    raise AssertionError(f'{config} names no net')


class ImageConfigsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix='taihu-image-configs-')
        work = cls.work = cls.scratch.name
        cls.data = {}
        for split, per_class, seed in (('train', TRAIN_PER_CLASS, 1), ('val', TEST_PER_CLASS, 2)):
            folder = os.path.join(work, 'imagenet', split)
            run(os.path.join(BUILD, 'tests', 'taihu_make_images'), folder, CLASSES, per_class, seed)
            database = folder + '_lmdb'
            run(os.path.join(APPS, 'taihu-convert'), 'imageset', folder, '--out=' + database, '--encoded',
                '--progress=quiet', *(['--shuffle'] if split == 'train' else []))
            cls.data[split] = (folder, database)

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def test_there_are_configs(self):
        names = sorted(os.path.basename(c) for c in CONFIGS)
        self.assertEqual(names, ['alexnet-bn-imagenet-lmdb.ini', 'alexnet-bn-imagenet.ini',
                                 'resnet50-imagenet-lmdb.ini', 'resnet50-imagenet.ini'])

    def test_each_config_trains_and_exports(self):
        for config in CONFIGS:
            name = os.path.basename(config)[:-len('.ini')]
            with self.subTest(config=name):
                which = 1 if name.endswith('-lmdb') else 0
                out = os.path.join(self.work, name)
                report = out + '.json'
                run(os.path.join(APPS, 'taihu-train'), '--config-file=' + config,
                    'data.train=' + self.data['train'][which], 'data.test=' + self.data['val'][which],
                    'batch_size=2', 'test_batch_size=2', 'iterations=2', 'display=1', 'data.decoders=1',
                    'output.dir=' + out, '--progress=quiet', '--log-level=warn', '--report=' + report)
                with open(report) as f:
                    r = json.load(f)
                self.assertEqual(r['iterations'], 2)
                self.assertEqual(r['data']['skipped'], 0)
                self.assertEqual(r['data']['left_out'], 0)
                epoch = r['history'][-1]
                for key in ('train_loss', 'test_loss'):
                    self.assertTrue(math.isfinite(epoch[key]), f'{key} = {epoch[key]}')
                checkpoints = glob.glob(os.path.join(out, '*.ckpt'))
                self.assertEqual(len(checkpoints), 1, checkpoints)
                if np is None:
                    continue
                onnx_path, sample = out + '.onnx', out + '-sample.npz'
                run(os.path.join(APPS, 'taihu-convert'), 'export', checkpoints[0], '--net=' + net_of(config),
                    '--format=onnx', '--out=' + onnx_path, '--sample=' + sample, '--log-level=warn')
                self.assertGreater(os.path.getsize(onnx_path), 0)
                if ORT_MISSING:
                    print(f'{name}: ONNX Runtime check skipped: {ORT_MISSING}')
                    continue
                sample = np.load(sample)
                outputs = ort_reference.run(BUILD, self.work, onnx_path, ort_reference.sample_inputs(sample), ENV)
                ort_reference.assert_taihus_outputs(self, outputs, sample)


if __name__ == '__main__':
    unittest.main(argv=sys.argv[:1], verbosity=2)
