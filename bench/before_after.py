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
and 100 MB, ms, the median of 7 per process). Results also as JSON (--json).
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
    rows = re.findall(r"^\| (\d+) \| ring \| ([\d.]+) \|", out, re.M)
    return {f"{mb} MB": float(ms) for mb, ms in rows}


LENET = ["epochs=1", "data.limit_train=19200", "data.limit_test=1000"]
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
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--pairs", type=int, default=7)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--json")
    args = p.parse_args()
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
