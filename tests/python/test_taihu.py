"""The Python module `taihu` (python/), run by ctest (`python`) with the build's package first on
the path: training equals taihu-train's, a net's gradients match finite differences, checkpoints
round-trip, and bad input is a Python exception naming what is wrong."""

import json
import os
import signal
import subprocess
import tempfile
import threading
import unittest

import numpy as np

import taihu

BUILD = os.environ.get("TAIHU_BUILD_DIR", "build")
SOURCE = os.environ.get("TAIHU_SOURCE_DIR", ".")
FASHION = "/usr/share/datasets/fashion-mnist"
HAVE_FASHION = any(os.path.exists(os.path.join(FASHION, name))
                   for name in ("train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"))
LENET_CONFIG = os.path.join(SOURCE, "config", "lenet-fashion.ini")
LENET_NET = os.path.join(SOURCE, "config", "nets", "lenet.ini")


def lenet_batch(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 1, 28, 28), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.float32)
    return x, y


@unittest.skipUnless(HAVE_FASHION, "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
class Training(unittest.TestCase):
    def test_lenet_from_python_equals_taihu_train(self):
        with tempfile.TemporaryDirectory() as work:
            small = ["epochs=1", "data.limit_train=960", "data.limit_test=500", "blas.threads=1"]
            report_file = os.path.join(work, "cli.json")
            # The same BLAS kernel in both processes (taihu-train would otherwise choose its own;
            # this one cannot re-execute itself to switch)
            env = dict(os.environ, OPENBLAS_CORETYPE=taihu.blas_kernel())
            subprocess.run([os.path.join(BUILD, "apps", "taihu-train"), "--config-file=" + LENET_CONFIG, *small,
                            "output.dir=" + os.path.join(work, "cli"), "--progress=quiet",
                            "--report=" + report_file], check=True, capture_output=True, env=env)
            with open(report_file) as f:
                cli = json.load(f)
            py = taihu.train(LENET_CONFIG, *small, progress="quiet", output__dir=os.path.join(work, "py"))
            self.assertIsInstance(py, dict)
            for key in ("train_loss", "test_loss", "test_accuracy", "iterations", "parameters"):
                self.assertEqual(py[key], cli[key], key)
            # The run's checkpoint, as a dict of arrays
            ckpt = taihu.load_checkpoint(os.path.join(work, "py", "lenet-fashion.ckpt"))
            self.assertEqual(ckpt["net"], "lenet")
            self.assertEqual(ckpt["iteration"], py["iterations"])
            self.assertEqual(ckpt["params"]["conv1/weight"].shape, (20, 1, 5, 5))
            self.assertEqual(ckpt["params"]["conv1/weight"].dtype, np.float32)
            # ... whose weights a Net takes, giving the trained net's test-set behaviour
            net = taihu.Net.from_config(LENET_CONFIG, batch=8)
            for name, view in net.params().items():
                view[...] = ckpt["params"][name]
            net.phase = "test"
            x, y = lenet_batch(8, 3)
            out = net.forward(data=x, label=y)
            self.assertTrue(np.isfinite(out["loss"]).all())

    def test_bad_overrides_are_config_errors(self):
        with self.assertRaisesRegex(taihu.ConfigError, "epochs"):
            taihu.train(LENET_CONFIG, "epochs=zero", progress="quiet")
        with self.assertRaises(ValueError):  # a ConfigError is a ValueError too
            taihu.train(LENET_CONFIG, "epochs", progress="quiet")
        with self.assertRaisesRegex(taihu.Error, "no-such.ini"):
            taihu.train(os.path.join(SOURCE, "config", "no-such.ini"))


SYNTHETIC_APP = """net = {net}
epochs = 1
batch_size = 16
test_batch_size = 64
display = 5
[data]
source = synthetic
shape = 1 28 28
classes = 10
train_size = {train_size}
test_size = 128
[solver]
type = sgd
base_lr = 0.01
[blas]
threads = 1
"""


class TrainerTests(unittest.TestCase):
    """taihu.Trainer on synthetic data (no data set needed): callbacks, stop, Ctrl-C, evaluate."""

    def setUp(self):
        self.work = tempfile.TemporaryDirectory()
        self.config = self.write_config(960)

    def tearDown(self):
        self.work.cleanup()

    def write_config(self, train_size):
        path = os.path.join(self.work.name, "app{}.ini".format(train_size))
        with open(path, "w") as f:
            f.write(SYNTHETIC_APP.format(net=os.path.abspath(LENET_NET), train_size=train_size))
        return path

    def trainer(self, name, config=None, **kwargs):
        return taihu.Trainer(config or self.config, progress="quiet", output__dir=os.path.join(self.work.name, name),
                             **kwargs)

    def test_callbacks_receive_every_iteration_and_the_metrics_files_records(self):
        iterations, epochs = [], []
        trainer = self.trainer("cb", on_iteration=iterations.append, on_epoch=epochs.append)
        report = trainer.fit()
        self.assertFalse(report["stopped"])
        self.assertEqual([r["iteration"] for r in iterations], list(range(1, report["iterations"] + 1)))
        with open(os.path.join(self.work.name, "cb", "metrics.jsonl")) as f:
            written = [json.loads(line) for line in f]
        # The file keeps every display-th iteration's record and the epoch's: the callbacks got the same figures
        by_iteration = {r["iteration"]: r for r in iterations}
        train_lines = [r for r in written if r["type"] == "train"]
        self.assertEqual(len(train_lines), report["iterations"] // 5)
        for line in train_lines:  # the file has 9 significant digits
            got = by_iteration[line["iteration"]]
            self.assertEqual(set(got), set(line))
            for key, value in line.items():
                if isinstance(value, float):
                    self.assertLessEqual(abs(got[key] - value), 1e-8 * abs(value), key)
                else:
                    self.assertEqual(got[key], value, key)
        self.assertEqual(len(epochs), 1)
        self.assertEqual(epochs[0]["type"], "test")
        self.assertLessEqual(abs(epochs[0]["loss"] - report["test_loss"]), 1e-8 * report["test_loss"])
        self.assertLessEqual(abs(epochs[0]["accuracy"] - report["test_accuracy"]), 1e-8)

    def test_stop_from_a_callback_leaves_a_checkpoint_that_resumes_bit_for_bit(self):
        whole = self.trainer("whole").fit()

        def stop_at_7(record):
            if record["iteration"] == 7:
                stopping.stop()
        stopping = self.trainer("stopped", on_iteration=stop_at_7)
        report = stopping.fit()
        # The run does not wait for callbacks: it stops after the iteration in flight when stop() comes
        self.assertTrue(report["stopped"])
        self.assertGreaterEqual(report["iterations"], 7)
        self.assertLess(report["iterations"], whole["iterations"])
        ckpt = stopping.checkpoint_path()
        self.assertEqual(taihu.load_checkpoint(ckpt)["iteration"], report["iterations"])
        resumed = stopping.fit(resume=ckpt)
        self.assertFalse(resumed["stopped"])
        for key in ("train_loss", "test_loss", "test_accuracy"):
            self.assertEqual(resumed[key], whole[key], key)

    def test_ctrl_c_stops_cleanly_with_a_checkpoint_then_raises(self):
        config = self.write_config(64000)  # 4000 iterations: far from done when the signal comes
        started = threading.Event()
        trainer = self.trainer("interrupted", config=config, on_iteration=lambda r: started.set())

        def ctrl_c():
            started.wait(60)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=ctrl_c, daemon=True).start()
        with self.assertRaises(KeyboardInterrupt):
            trainer.fit()
        ckpt = taihu.load_checkpoint(trainer.checkpoint_path())
        self.assertGreater(ckpt["iteration"], 0)
        self.assertLess(ckpt["iteration"], 4000)

    def test_a_callbacks_error_stops_the_run_and_is_raised(self):
        def fails(record):
            raise RuntimeError("callback failed at {}".format(record["iteration"]))
        with self.assertRaisesRegex(RuntimeError, "callback failed at 1"):
            self.trainer("failing", on_iteration=fails).fit()

    def test_evaluate_scores_the_checkpoint_as_the_run_did(self):
        trainer = self.trainer("eval")
        with self.assertRaisesRegex(taihu.ConfigError, "no checkpoint"):
            trainer.evaluate()
        report = trainer.fit()
        scores = trainer.evaluate()
        self.assertEqual(set(scores), {"test"})
        self.assertEqual(scores["test"]["loss"], report["test_loss"])
        self.assertEqual(scores["test"]["accuracy"], report["test_accuracy"])


TREE_MODEL = """epochs = 3
batch_size = 10
seed = 1
[model]
type = {model}
embedding = 16
hidden = 16
[solver]
type = adam
base_lr = 0.01
"""


class GraphDataTests(unittest.TestCase):
    """A dynamic model trained on graphs built in Python (taihu.GraphData, [data] source = memory)."""

    def setUp(self):
        self.work = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.work.cleanup()

    def config(self, model):
        path = os.path.join(self.work.name, model + ".ini")
        with open(path, "w") as f:
            f.write(TREE_MODEL.format(model=model))
        return path

    @staticmethod
    def trees(n, seed):
        """Binary trees whose every node is labelled 1 if a "good" leaf is below it: learnable."""
        import random
        rng = random.Random(seed)

        def tree(depth):
            if depth == 0 or rng.random() < 0.3:
                word = rng.choice(["good", "bad", "meh", "ok"])
                return (int(word == "good"), word)
            children = [tree(depth - 1), tree(depth - 1)]
            return (max(c[0] for c in children), children)
        return [tree(4) for _ in range(n)]

    def test_a_tree_lstm_learns_trees_built_in_python(self):
        data = taihu.GraphData(self.trees(300, 1), self.trees(100, 2), dev=self.trees(50, 3))
        self.assertEqual(data.classes, 2)
        self.assertEqual(data.sizes, (300, 50, 100))
        self.assertEqual(data.vocabulary[0], "<unk>")
        self.assertEqual(sorted(data.vocabulary[1:]), ["bad", "good", "meh", "ok"])
        epochs = []
        trainer = taihu.Trainer(self.config("tree_lstm"), data=data, progress="quiet", on_epoch=epochs.append,
                                output__dir=os.path.join(self.work.name, "tree"))
        report = trainer.fit()
        self.assertEqual(report["data"], "memory")
        self.assertEqual([e["type"] for e in epochs], ["eval"] * 3)
        self.assertGreaterEqual(report["test_accuracy"], 0.95)  # root accuracy; chance is about 0.6
        scores = trainer.evaluate()
        self.assertEqual(set(scores), {"dev", "test"})
        self.assertEqual(scores["test"]["root_accuracy"], report["test_accuracy"])

    def test_bracket_strings_are_trees_too(self):
        data = taihu.GraphData(["(1 (0 a) (1 b))", "(0 x)"], ["(1 (1 a) (0 c))"])
        self.assertEqual(data.vocabulary, ["<unk>", "a", "b", "x"])
        self.assertEqual(data.classes, 2)

    def test_an_lstm_language_model_learns_sequences_built_in_python(self):
        sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "sat", "on", "a", "rug"]] * 40
        data = taihu.GraphData(sentences, sentences[:4], kind="sequences")
        self.assertIn("<eos>", data.vocabulary)
        self.assertEqual(data.classes, data.vocabulary_size)
        report = taihu.Trainer(self.config("lstm"), data=data, progress="quiet",
                               output__dir=os.path.join(self.work.name, "lm")).fit()
        self.assertLess(report["test_perplexity"], 4.0)  # of 10 tokens; the sentences are nearly fixed

    def test_bad_graphs_name_the_sample(self):
        cases = [([(1, [])], "train\\[0\\]: a node with an empty list of children"),
                 ([(1.5, "a")], "train\\[0\\]: a label is an int or None"),
                 ([(1, "a"), (0, 3)], "train\\[1\\]: an integer token among string tokens"),
                 ([[1, 2, 3]], "train\\[0\\]: a tree node is \\(label, token\\)")]
        for train, message in cases:
            with self.assertRaisesRegex(taihu.ConfigError, message):
                taihu.GraphData(train, [(0, "a")])
        with self.assertRaisesRegex(taihu.ConfigError, "test\\[0\\]:1:5: malformed bracket tree"):
            taihu.GraphData([(1, "a")], ["(1 (a"])
        with self.assertRaisesRegex(taihu.ConfigError, "classes = 2, but a tree has label 4"):
            taihu.GraphData([(4, "a")], [(0, "a")], classes=2)
        with self.assertRaisesRegex(taihu.ConfigError, "source.*is sst, but graphs were handed over"):
            taihu.Trainer(self.config("tree_lstm"), "data.source=sst", data=taihu.GraphData([(1, "a")], [(0, "a")]),
                          progress="quiet").fit()
        with self.assertRaisesRegex(taihu.ConfigError, "train graph 0, vertex 3: 3 children; model 'tree_lstm' takes"):
            taihu.Trainer(self.config("tree_lstm"), data=taihu.GraphData([(1, [(0, "a"), (0, "b"), (1, "c")])],
                                                                         [(0, "a")]),
                          progress="quiet", output__dir=os.path.join(self.work.name, "bad")).fit()


class NetTests(unittest.TestCase):
    def setUp(self):
        self.net = taihu.Net.from_config(LENET_NET, batch=4, seed=7)

    def test_describes_itself(self):
        self.assertEqual(self.net.name, "lenet")
        self.assertEqual(self.net.inputs, ["data", "label"])
        self.assertIn("loss", self.net.outputs)
        self.assertEqual(self.net.phase, "train")
        self.assertEqual(self.net.params()["conv1/weight"].shape, (20, 1, 5, 5))

    def test_batch_follows_the_inputs(self):
        x, y = lenet_batch(3, 1)
        out = self.net.forward(data=x, label=y)
        self.assertEqual(self.net.batch, 3)
        self.assertEqual(out["loss"].shape, ())
        self.assertTrue(np.isfinite(out["loss"]))

    def test_gradients_match_finite_differences(self):
        x, y = lenet_batch(4, 2)
        self.net.forward(data=x, label=y)
        self.net.backward()
        grads = {k: v.copy() for k, v in self.net.grads().items()}
        params = self.net.params()
        rng = np.random.default_rng(5)
        for name in ("conv1/weight", "conv2/bias", "ip1/weight", "ip2/weight", "ip2/bias"):
            flat = params[name].reshape(-1)
            for index in rng.choice(flat.size, 3, replace=False):
                keep = float(flat[index])
                step = 2e-3  # small against max pooling's and ReLU's kinks, large against float32 rounding
                flat[index] = keep + step
                up = float(self.net.forward(data=x, label=y)["loss"])
                flat[index] = keep - step
                down = float(self.net.forward(data=x, label=y)["loss"])
                flat[index] = keep
                numeric = (up - down) / (2 * step)
                analytic = float(grads[name].reshape(-1)[index])
                self.assertAlmostEqual(numeric, analytic, delta=1e-3 + 5e-2 * abs(analytic),
                                       msg="{}[{}]".format(name, index))

    def test_params_are_views_of_the_net(self):
        x, y = lenet_batch(4, 4)
        before = float(self.net.forward(data=x, label=y)["loss"])
        self.net.params()["ip2/weight"][...] = 0
        self.net.params()["ip2/bias"][...] = 0
        after = float(self.net.forward(data=x, label=y)["loss"])
        self.assertNotEqual(before, after)
        self.assertAlmostEqual(after, float(np.log(10)), places=5)  # uniform scores over 10 classes

    def test_bad_inputs_name_what_is_wrong(self):
        x, y = lenet_batch(4, 6)
        with self.assertRaisesRegex(taihu.ConfigError, r"input 'data' has shape \(4, 1, 27, 28\), the net takes "
                                                       r"\(N, 1, 28, 28\)"):
            self.net.forward(data=np.zeros((4, 1, 27, 28), np.float32), label=y)
        with self.assertRaisesRegex(taihu.ConfigError, r"input 'label' has shape \(3,\).*with N = 4"):
            self.net.forward(data=x, label=y[:3])
        with self.assertRaisesRegex(TypeError, "float64"):
            self.net.forward(data=x.astype(np.float64), label=y)
        with self.assertRaisesRegex(taihu.ConfigError, "missing: label"):
            self.net.forward(data=x)
        with self.assertRaisesRegex(taihu.ConfigError, "no input 'image'"):
            self.net.forward(data=x, label=y, image=x)
        with self.assertRaisesRegex(taihu.ConfigError, "backward\\(\\) needs a forward"):
            taihu.Net.from_config(LENET_NET).backward()
        with self.assertRaisesRegex(taihu.ConfigError, "phase must be"):
            self.net.phase = "eval"
        # The net is unchanged by the refused calls: it still computes
        self.assertTrue(np.isfinite(self.net.forward(data=x, label=y)["loss"]))


class Checkpoints(unittest.TestCase):
    def test_arrays_round_trip(self):
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "mine.ckpt")
            params = {"a/weight": np.arange(6, dtype=np.float32).reshape(2, 3),
                      "a/bias": np.array([1.5, -2.0], np.float32)}
            taihu.save_checkpoint(path, params, net="tiny", iteration=12, epoch=1, seed=9,
                                  solver_state={"a/weight/momentum": np.ones((2, 3), np.float32)})
            back = taihu.load_checkpoint(path)
            self.assertEqual((back["net"], back["iteration"], back["epoch"], back["seed"]), ("tiny", 12, 1, 9))
            for name, value in params.items():
                np.testing.assert_array_equal(back["params"][name], value)
            np.testing.assert_array_equal(back["solver_state"]["a/weight/momentum"], np.ones((2, 3), np.float32))

    def test_bad_checkpoints_are_errors(self):
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "bad.ckpt")
            with self.assertRaisesRegex(TypeError, "'w' is float64"):
                taihu.save_checkpoint(path, {"w": np.zeros(3)})
            self.assertFalse(os.path.exists(path))
            with open(path, "wb") as f:
                f.write(b"not a checkpoint at all")
            with self.assertRaises(taihu.Error):
                taihu.load_checkpoint(path)
            with self.assertRaises(taihu.Error):
                taihu.load_checkpoint(os.path.join(work, "missing.ckpt"))


if __name__ == "__main__":
    unittest.main()
