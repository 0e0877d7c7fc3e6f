#!/usr/bin/python3
"""PyTorch CPU training-throughput baseline for taihu's benchmarks.

Measures images/s of a full training step (forward, loss, backward,
optimizer step) on synthetic data for three reference networks:

  lenet     Caffe's MNIST LeNet, 1x28x28 inputs, 10 classes (default batch 64)
  alexnet   Caffe's AlexNet (60.965M parameters, LRN, two-group convolutions),
            3x227x227 inputs, 1000 classes (default batch 16)
  resnet50  Bottleneck ResNet-50 (v1.5 layout, 25.557M parameters),
            3x224x224 inputs, 1000 classes (default batch 8)

Both networks are defined here so that torchvision is not needed.

Typical use (Debian's python3-torch):

  # out of the box: whatever thread count torch picks by itself
  /usr/bin/python3 pytorch_baseline.py --model lenet

  # tuned: OpenBLAS single-threaded, torch's own pool sized explicitly
  OPENBLAS_NUM_THREADS=1 /usr/bin/python3 pytorch_baseline.py \
      --model lenet --threads 2

OPENBLAS_CORETYPE may be set to force an OpenBLAS kernel, but only to one
that the CPU supports: forcing SkylakeX on a CPU without AVX-512 (e.g. AMD
Zen 3) dies with SIGILL.  Zen is auto-detected, so leave it unset there.

Timing: `--warmup` untimed steps, then `--repeats` timed runs of `--iters`
steps each; the reported figure is the median images/s over the repeats.
"""

import argparse
import ctypes
import json
import os
import platform
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allocator import allocator_in_use  # noqa: E402

# ---------------------------------------------------------------------------
# Networks
# ---------------------------------------------------------------------------

class LeNet(nn.Module):
    """Caffe's lenet_train_test.prototxt: note there is no nonlinearity after
    the convolutions, only after the first fully connected layer."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, kernel_size=5)     # 28x28 -> 24x24
        self.conv2 = nn.Conv2d(20, 50, kernel_size=5)    # 12x12 -> 8x8
        self.ip1 = nn.Linear(50 * 4 * 4, 500)
        self.ip2 = nn.Linear(500, num_classes)

    def forward(self, x):
        x = F.max_pool2d(self.conv1(x), kernel_size=2, stride=2)  # -> 12x12
        x = F.max_pool2d(self.conv2(x), kernel_size=2, stride=2)  # -> 4x4
        x = torch.flatten(x, 1)
        x = F.relu(self.ip1(x))
        return self.ip2(x)


def conv_bn(in_ch, out_ch, kernel, stride=1):
    """Bias-free convolution ("same" padding for odd kernels) + batch norm."""
    return nn.Sequential(
        nn.Conv2d(in_ch, out_ch, kernel, stride=stride,
                  padding=kernel // 2, bias=False),
        nn.BatchNorm2d(out_ch),
    )


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 -> 1x1 expand (x4), with the stride on the 3x3
    convolution (the "v1.5" variant that torchvision and most benchmarks use;
    the parameter count is the same as the original v1)."""

    expansion = 4

    def __init__(self, in_ch, width, stride):
        super().__init__()
        out_ch = width * self.expansion
        self.reduce = conv_bn(in_ch, width, 1)
        self.spatial = conv_bn(width, width, 3, stride)
        self.expand = conv_bn(width, out_ch, 1)
        # Projection shortcut whenever the shape changes.
        self.shortcut = None
        if stride != 1 or in_ch != out_ch:
            self.shortcut = conv_bn(in_ch, out_ch, 1, stride)

    def forward(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        y = F.relu(self.reduce(x), inplace=True)
        y = F.relu(self.spatial(y), inplace=True)
        y = self.expand(y)
        return F.relu(y + identity, inplace=True)


class AlexNet(nn.Module):
    """Caffe's bvlc_alexnet, as taihu's config/nets/alexnet.ini: LRN after
    conv1 and conv2, two-group conv2, conv4 and conv5, dropout 0.5."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 96, 11, stride=4), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),                       # 55 -> 27
            nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(inplace=True),
            nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0),
            nn.MaxPool2d(3, stride=2, ceil_mode=True),                       # 27 -> 13
            nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, ceil_mode=True))                       # 13 -> 6
        self.classifier = nn.Sequential(
            nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class ResNet50(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, stride=2)                  # 224 -> 112
        stages = []
        in_ch = 64
        # (bottleneck width, number of blocks, stride of the first block)
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2),
                                      (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                stages.append(Bottleneck(in_ch, width, stride if i == 0 else 1))
                in_ch = width * Bottleneck.expansion
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x):
        x = F.relu(self.stem(x), inplace=True)
        x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)  # 112 -> 56
        x = self.stages(x)                                       # 56 -> 7
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# name -> (constructor, input shape without batch, classes, default batch,
#          expected parameter count, input generator)
# LeNet gets pixel-like values in [0, 1) (Caffe scales MNIST by 1/256);
# ResNet-50 gets normalised, ImageNet-like N(0, 1) values.
MODELS = {
    "lenet": (LeNet, (1, 28, 28), 10, 64, 431_080, torch.rand),
    "alexnet": (AlexNet, (3, 227, 227), 1000, 16, 60_965_224, torch.randn),
    "resnet50": (ResNet50, (3, 224, 224), 1000, 8, 25_557_032, torch.randn),
}

# Default (iters, warmup) per model: enough for a stable figure on a small
# machine without making ResNet-50 take minutes.
DEFAULT_ITERS = {"lenet": (100, 10), "alexnet": (5, 2), "resnet50": (5, 2)}


# ---------------------------------------------------------------------------
# Environment reporting
# ---------------------------------------------------------------------------

ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
            "MKL_NUM_THREADS")


def loaded_math_libraries():
    """Shared objects mapped into this process that matter for speed
    (BLAS, oneDNN, MKL, OpenMP runtimes), read from /proc/self/maps."""
    keys = ("blas", "lapack", "dnnl", "mkl", "gomp", "iomp", "omp.so")
    found = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if path.startswith("/") and any(
                        k in os.path.basename(path) for k in keys):
                    found.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(found)


def openblas_info(libs):
    """Ask the OpenBLAS that torch actually loaded which kernel (core) it
    selected and how many threads it will use; None if not OpenBLAS."""
    for path in libs:
        if "openblas" not in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)  # already mapped: same handle, no reload
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return {
                "library": path,
                "corename": lib.openblas_get_corename().decode(),
                "config": lib.openblas_get_config().decode().strip(),
                "num_threads": lib.openblas_get_num_threads(),
            }
        except (OSError, AttributeError):
            continue
    return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


# ---------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=sorted(MODELS), default="lenet")
    p.add_argument("--batch", type=int, help="batch size (lenet 64, resnet50 8)")
    p.add_argument("--iters", type=int, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, help="untimed steps before timing")
    p.add_argument("--repeats", type=int, default=5,
                   help="timed repeats; the median is reported (default 5)")
    p.add_argument("--threads", type=int,
                   help="torch.set_num_threads(N); default: torch's own choice")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE",
                   help="append the result as one JSON object per line")
    p.add_argument("--channels-last", action="store_true",
                   help="model and images in torch.channels_last (NHWC), the "
                        "layout oneDNN's CPU convolutions often prefer")
    p.add_argument("--show-kernels", action="store_true",
                   help="profile one extra step and list the slowest ATen ops "
                        "(shows whether convolutions run in oneDNN or im2col+BLAS)")
    args = p.parse_args()
    _, _, _, default_batch, _, _ = MODELS[args.model]
    default_iters, default_warmup = DEFAULT_ITERS[args.model]
    args.batch = default_batch if args.batch is None else args.batch
    args.iters = default_iters if args.iters is None else args.iters
    args.warmup = default_warmup if args.warmup is None else args.warmup
    for name in ("batch", "iters", "repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    return args


def main():
    args = parse_args()
    # Denormals can make a CPU step many times slower; flush them to zero.
    flush_denormal = torch.set_flush_denormal(True)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    make_model, in_shape, classes, _, expected_params, gen = MODELS[args.model]
    model = make_model(classes)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == expected_params, (
        f"{args.model}: {n_params} parameters, expected {expected_params}")
    model.train()

    # One fixed synthetic batch, reused every step (as Caffe's `time` does),
    # so that data generation is not part of what is measured.
    images = gen(args.batch, *in_shape)
    if args.channels_last and len(in_shape) == 3:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    labels = torch.randint(0, classes, (args.batch,))
    # Caffe's LeNet solver: lr 0.01, momentum 0.9, weight decay 5e-4.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr,
                                momentum=0.9, weight_decay=5e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)  # softmax + NLL
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.warmup):
        step()

    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.iters):
            loss = step()
        elapsed = time.perf_counter() - start
        rates.append(args.batch * args.iters / elapsed)
    final_loss = loss.item()
    median = statistics.median(rates)

    libs = loaded_math_libraries()
    result = {
        "model": args.model,
        "batch": args.batch,
        "channels_last": args.channels_last,
        "images_per_second": median,
        "repeats": rates,
        "iters": args.iters,
        "warmup": args.warmup,
        "params": n_params,
        "final_loss": final_loss,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "threads_requested": args.threads,
        "interop_threads": torch.get_num_interop_threads(),
        "flush_denormal": flush_denormal,
        "mkldnn_available": torch.backends.mkldnn.is_available(),
        "mkl_available": torch.backends.mkl.is_available(),
        "openblas": openblas_info(libs),
        "allocator": allocator_in_use(),
        "math_libraries": libs,
        "env": {k: os.environ.get(k) for k in ENV_VARS},
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }

    env = " ".join(f"{k}={v}" for k, v in result["env"].items() if v is not None)
    spread = f"{min(rates):.1f}..{max(rates):.1f}"
    print(f"pytorch {torch.__version__} {args.model} batch {args.batch}: "
          f"{median:.1f} images/s (median of {args.repeats} x {args.iters} iters, "
          f"range {spread}), threads {result['threads']}, "
          f"openblas core {(result['openblas'] or {}).get('corename', '-')}, "
          f"layout {'NHWC' if args.channels_last else 'NCHW'}, allocator {result['allocator']}, "
          f"loss {final_loss:.3f}" + (f", env {env}" if env else ""))
    if not torch.isfinite(loss):
        print("warning: loss is not finite; try a smaller --lr", file=sys.stderr)

    if args.show_kernels:
        with torch.autograd.profiler.profile() as prof:
            step()
        print(prof.key_averages().table(sort_by="self_cpu_time_total",
                                        row_limit=15))

    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
