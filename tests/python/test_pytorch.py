"""taihu's nets against PyTorch on the same weights and inputs (ctest `python`): a forward and a
backward through taihu.Net from NumPy equal PyTorch's within float tolerance. Skipped where
PyTorch (Debian's python3-torch) is not installed."""

import os
import re
import tempfile
import unittest

import numpy as np

import taihu

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

SOURCE = os.environ.get("TAIHU_SOURCE_DIR", ".")
NETS = os.path.join(SOURCE, "config", "nets")


def lenet(p, x, bn):
    """LeNet (config/nets/lenet.ini) or LeNet-BN without its dropout (lenet-bn.ini), in PyTorch:
    Caffe's semantics (max pooling 2/2, BatchNorm on the batch's statistics, then Scale)."""
    def block(x, name):
        if not bn:
            return F.max_pool2d(F.conv2d(x, p[name + "/weight"], p[name + "/bias"]), 2, 2)
        x = F.conv2d(x, p[name + "/weight"], padding=2)
        x = F.batch_norm(x, None, None, training=True, eps=1e-5)
        x = x * p[name + "_scale/weight"].view(1, -1, 1, 1) + p[name + "_scale/bias"].view(1, -1, 1, 1)
        return F.max_pool2d(F.relu(x), 2, 2)
    x = block(block(x, "conv1"), "conv2").flatten(1)
    x = F.relu(F.linear(x, p["ip1/weight"], p["ip1/bias"]))
    return F.linear(x, p["ip2/weight"], p["ip2/bias"])


@unittest.skipIf(torch is None, "PyTorch is not installed (apt-get install python3-torch)")
class AgainstPyTorch(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.TemporaryDirectory()
        torch.set_num_threads(1)

    def tearDown(self):
        self.work.cleanup()

    def net_without_dropout(self, name):
        with open(os.path.join(NETS, name)) as f:
            text = f.read()
        path = os.path.join(self.work.name, name)
        with open(path, "w") as f:
            f.write(re.sub(r"\[layer drop1\][^\[]*", "", text))
        return path

    def check(self, net_file, bn, batch=6):
        net = taihu.Net.from_config(net_file, batch=batch, seed=3)
        rng = np.random.default_rng(11)
        # Random weights of a sensible scale, written through the parameter views
        for name, view in net.params().items():
            fan_in = int(np.prod(view.shape[1:])) if view.ndim > 1 else 1
            view[...] = rng.normal(0.0, 1.0 / np.sqrt(fan_in), view.shape).astype(np.float32)
        x = rng.random((batch, 1, 28, 28), dtype=np.float32)
        y = rng.integers(0, 10, batch).astype(np.float32)
        out = net.forward(data=x, label=y)
        net.backward()

        params = {k: torch.tensor(v, requires_grad=True) for k, v in net.params().items()
                  if not k.endswith("/mean") and not k.endswith("/variance")}
        logits = lenet(params, torch.tensor(x), bn)
        loss = F.cross_entropy(logits, torch.tensor(y).long())
        loss.backward()

        self.assertAlmostEqual(float(out["loss"]), loss.item(), delta=1e-5 * max(1.0, loss.item()))
        grads = net.grads()
        for name, p in params.items():
            ours, theirs = grads[name], p.grad.numpy()
            scale = max(np.abs(theirs).max(), 1e-6)
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-4 * scale, err_msg=name)

    def test_lenet_forward_and_backward_match(self):
        self.check(os.path.join(NETS, "lenet.ini"), bn=False)

    def test_lenet_bn_forward_and_backward_match(self):
        self.check(self.net_without_dropout("lenet-bn.ini"), bn=True)


if __name__ == "__main__":
    unittest.main()
