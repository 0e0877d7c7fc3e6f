#!/usr/bin/env python3
"""Side-by-side regression check of two builds of taihu on the same machine.

Runs each case with the BEFORE build and the AFTER build alternately (the
order swapped every pair, so neither build always runs on a warmer machine),
and prints, per case, the median of each build and the median of the per-pair
ratios after / before (above 1: the after build is faster).

  bench/before_after.py --before=OLD/build --after=build [--pairs=7] [--cases=...]

Cases: lenet1 and lenet4 (LeNet on Fashion-MNIST, 1 worker x 64 and
4 in-process workers x 16, images/s), treelstm (Tree-LSTM on SST, batch 25,
trees/s), allreduce (ring allreduce across 4 processes over loopback at 1, 16
and 100 MB, ms, the median of 7 per process), sw26010 (LeNet data-parallel
on 2 simulated SW26010 chips, 8 iterations, host images/s) and images (LeNet,
1 worker x 64, reading Fashion-MNIST as a folder of PNG files through the
decoder actors, images/s). Results also as JSON (--json).
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def train(build, config, overrides, metric):
    with tempfile.TemporaryDirectory() as out:
        report = os.path.join(out, "report.json")
        subprocess.run([os.path.join(build, "apps", "taihu-train"), f"--config-file={config}",
                        f"output.dir={out}", "output.checkpoint=", "output.metrics=",
                        "--progress=quiet", "--log-level=warn", f"--report={report}", *overrides],
                       check=True, cwd=ROOT, timeout=600)
        with open(report) as f:
            return {"": json.load(f)[metric]}


def allreduce(build, sizes):
    out = subprocess.run([os.path.join(build, "bench", "bench_remote_allreduce_actors"), "--ranks=4",
                          f"--mb={','.join(map(str, sizes))}", "--runs=7", "--algorithm=ring"],
                         check=True, cwd=ROOT, capture_output=True, text=True, timeout=600).stdout
    # Builds since 2026-12-05 print a tls column after the algorithm.
    rows = re.findall(r"^\| (\d+) \| ring \| (?:[a-z_]+ \| )?([\d.]+) \|", out, re.M)
    return {f"{mb} MB": float(ms) for mb, ms in rows}


LENET = ["epochs=1", "data.limit_train=19200", "data.limit_test=1000"]
SCRATCH = tempfile.TemporaryDirectory(prefix="before_after.")


def sw26010_config():
    """config/lenet-sw26010-4chips.ini without the [network] keys that builds
    before 2026-12-06 do not read (they refine the allreduce's simulated time,
    not the host work this case times)."""
    path = os.path.join(SCRATCH.name, "sw26010.ini")
    if not os.path.exists(path):
        newer = ("small_reduce_bytes", "small_reduce_rate", "placement")
        lines = (ROOT / "config" / "lenet-sw26010-4chips.ini").read_text().splitlines()
        lines = [line.replace("net = nets/", f"net = {ROOT}/config/nets/") for line in lines
                 if not line.startswith(newer)]
        pathlib.Path(path).write_text("\n".join(lines) + "\n")
    return path


def image_folder_config(after):
    """LeNet's config over Fashion-MNIST written out as PNG files (once, by the
    after build's tests/taihu_idx_to_images), one folder per class."""
    path = os.path.join(SCRATCH.name, "images.ini")
    if not os.path.exists(path):
        fm = "/usr/share/datasets/fashion-mnist"
        for split, prefix in (("train", "train"), ("test", "t10k")):
            subprocess.run([os.path.join(after, "tests", "taihu_idx_to_images"),
                            f"{fm}/{prefix}-images-idx3-ubyte.gz", f"{fm}/{prefix}-labels-idx1-ubyte.gz",
                            os.path.join(SCRATCH.name, split), "png"], check=True, capture_output=True)
        base = (ROOT / "config" / "lenet-fashion.ini").read_text().split("[data]")
        solver = base[1][base[1].index("[solver]"):]
        pathlib.Path(path).write_text(
            base[0].replace("net = nets/", f"net = {ROOT}/config/nets/") +
            f"[data]\nsource = images\ntrain = {SCRATCH.name}/train\ntest = {SCRATCH.name}/test\n"
            "channels = 1\ndecoders = 2\nscale = 0.00392156862745098\n\n" + solver)
    return path
CASES = {
    "lenet1": ("LeNet, 1 worker x 64", "img/s", True,
               lambda b: train(b, "config/lenet-fashion.ini", LENET + ["workers=1", "batch_size=64"],
                               "images_per_second")),
    "lenet4": ("LeNet, 4 workers x 16", "img/s", True,
               lambda b: train(b, "config/lenet-fashion.ini", LENET + ["workers=4", "batch_size=16"],
                               "images_per_second")),
    "treelstm": ("Tree-LSTM, batch 25", "trees/s", True,
                 lambda b: train(b, "config/treelstm-sst.ini",
                                 ["epochs=1", "data.limit_train=4000", "data.limit_test=100"],
                                 "trees_per_second")),
    "allreduce": ("ring allreduce, 4 processes", "ms", False, lambda b: allreduce(b, [1, 16, 100])),
    "sw26010": ("LeNet, 2 simulated SW26010 chips", "img/s", True,
                lambda b: train(b, sw26010_config(), ["workers=2", "iterations=8", "data.limit_test=1000"],
                                "images_per_second")),
    "images": ("LeNet, 1 worker x 64, PNG folder", "img/s", True,
               lambda b: train(b, image_folder_config(ARGS.after),
                               # all 60,000 files, shuffled (a limit would take the first classes' alone)
                               ["epochs=1", "iterations=300", "data.limit_test=1000", "workers=1", "batch_size=64"],
                               "images_per_second")),
}
ARGS = None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--json")
    global ARGS
    args = ARGS = p.parse_args()
    results = []
    for name in args.cases.split(","):
        title, unit, higher_is_better, run = CASES[name]
        series = {}
        failed = {"before": 0, "after": 0}
        for i in range(args.pairs):
            order = [("before", args.before), ("after", args.after)]
            if i % 2:
                order.reverse()
            got = {}
            for label, build in order:
                try:
                    got[label] = run(build)
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
                    print(f"{name}: the {label} build failed: {e}", file=sys.stderr, flush=True)
                    failed[label] += 1
            if len(got) < 2:
                continue  # a pair needs both
            for key in got["before"]:
                s = series.setdefault(key, {"before": [], "after": []})
                s["before"].append(got["before"][key])
                s["after"].append(got["after"][key])
            print(f"{name} pair {i + 1}/{args.pairs}: {got}", file=sys.stderr, flush=True)
        for key, s in series.items():
            ratios = [(a / b if higher_is_better else b / a) for a, b in zip(s["after"], s["before"])]
            results.append({"case": f"{title} {key}".strip(), "unit": unit, "pairs": len(ratios),
                            "before": statistics.median(s["before"]), "after": statistics.median(s["after"]),
                            "speedup": statistics.median(ratios),
                            "pairs_won": sum(r > 1 for r in ratios), "failed": failed, "runs": s})
    print("| case | unit | before | after | after vs before (pairs won) | failed runs (before, after) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['case']} | {r['unit']} | {r['before']:.4g} | {r['after']:.4g} | "
              f"{r['speedup']:.2f}x ({r['pairs_won']} of {r['pairs']}) | {r['failed']['before']}, {r['failed']['after']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
