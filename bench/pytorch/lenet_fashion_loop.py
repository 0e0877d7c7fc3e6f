#!/usr/bin/python3
"""A plain PyTorch training loop for LeNet on Fashion-MNIST, doing what
`taihu-train config/lenet-fashion.ini` does, for bench/compare_lenet_fashion.sh:

  the same IDX files (Debian's dataset-fashion-mnist), pixels scaled by 1/255;
  Caffe's LeNet (bench/pytorch/pytorch_baseline.py's LeNet), Xavier-uniform
  weights (Caffe's xavier: U(+-sqrt(3 / fan_in))), zero biases;
  batch 64, a fresh shuffle each epoch, the last partial batch dropped;
  SGD with momentum 0.9 and weight decay 5e-4, the learning rate following a
  cosine from 0.05 to 0 over all iterations, per iteration (Caffe's update
  puts the rate inside the momentum, PyTorch's outside: with a changing rate
  the two differ slightly);
  the test set evaluated once at the end, in batches of 1000.

Prints one JSON line: training images/s (the training steps only, data
loading included, evaluation excluded), wall seconds, test accuracy.
"""

import argparse
import gzip
import json
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from allocator import allocator_in_use
from pytorch_baseline import LeNet


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--threads", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", metavar="FILE", help="append the result as one JSON line")
    args = p.parse_args()
    start = time.perf_counter()
    torch.set_flush_denormal(True)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    def images(name):
        x = read_idx(f"{args.dir}/{name}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
        return torch.from_numpy(x).unsqueeze(1)

    def labels(name):
        return torch.from_numpy(read_idx(f"{args.dir}/{name}-labels-idx1-ubyte.gz").astype(np.int64))

    train_x, train_y, test_x, test_y = images("train"), labels("train"), images("t10k"), labels("t10k")
    model = LeNet(10)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            bound = math.sqrt(3.0 / fan_in)
            nn.init.uniform_(m.weight, -bound, bound)
            nn.init.zeros_(m.bias)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    per_epoch = len(train_x) // args.batch
    total = per_epoch * args.epochs
    train_seconds = 0.0
    iteration = 0
    model.train()
    for epoch in range(args.epochs):
        order = torch.randperm(len(train_x))
        t0 = time.perf_counter()
        for b in range(per_epoch):
            for group in optimizer.param_groups:
                group["lr"] = args.lr * 0.5 * (1.0 + math.cos(math.pi * iteration / total))
            index = order[b * args.batch:(b + 1) * args.batch]
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(train_x[index]), train_y[index])
            loss.backward()
            optimizer.step()
            iteration += 1
        train_seconds += time.perf_counter() - t0
    model.eval()
    correct = 0
    with torch.no_grad():
        for b in range(0, len(test_x), 1000):
            correct += (model(test_x[b:b + 1000]).argmax(1) == test_y[b:b + 1000]).sum().item()
    result = {
        "framework": "pytorch",
        "epochs": args.epochs,
        "batch": args.batch,
        "images_per_second": total * args.batch / train_seconds,
        "train_seconds": train_seconds,
        "seconds": time.perf_counter() - start,
        "test_accuracy": correct / len(test_x),
        "final_loss": loss.item(),
        "threads": torch.get_num_threads(),
        "allocator": allocator_in_use(),
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
