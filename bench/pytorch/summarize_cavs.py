#!/usr/bin/python3
"""Medians over runs of the Cavs benchmark rows in DIR/*.jsonl (written by
bench/compare_cavs.sh), one line per (system, workload, batch, threads, mode);
writes DIR/summary.json and, with --markdown, prints a Markdown table.

Each run's 1-minute load average is kept: on a shared 2-core machine, runs at
a high load are slower, and the spread (min..max) says how much."""

import argparse
import glob
import json
import os
import statistics

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("dir", nargs="?", default="bench/results/cavs")
p.add_argument("--markdown", action="store_true")
p.add_argument("--max-load", type=float, help="only runs whose 1-minute load average was at most this")
p.add_argument("--output", help="summary file (default DIR/summary.json)")
args = p.parse_args()

groups = {}
for path in sorted(glob.glob(os.path.join(args.dir, "*.jsonl"))):
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            if args.max_load is not None and r.get("loadavg", [0])[0] > args.max_load:
                continue
            key = (r["system"], r["workload"], r["bs"], r["threads"], r["mode"])
            groups.setdefault(key, []).append(r)

rows = []
for key in sorted(groups):
    rs = groups[key]
    rate = [r["trees_per_s"] for r in rs]
    vrate = [r["vertices_per_s"] for r in rs]
    loads = [round(r["loadavg"][0], 2) for r in rs if r.get("loadavg")]
    rows.append(dict(zip(("system", "workload", "bs", "threads", "mode"), key), runs=len(rs),
                     trees_per_s=statistics.median(rate), trees_per_s_min=min(rate), trees_per_s_max=max(rate),
                     vertices_per_s=statistics.median(vrate),
                     ms_p50=statistics.median(r["ms_p50"] for r in rs),
                     ms_p90=statistics.median(r["ms_p90"] for r in rs),
                     load_median=round(statistics.median(loads), 2) if loads else None, loads=loads,
                     corename=(rs[0].get("openblas") or {}).get("corename")))
with open(args.output or os.path.join(args.dir, "summary.json"), "w") as f:
    json.dump(rows, f, indent=1)

if args.markdown:
    print("| system | workload | batch | threads | mode | runs | trees/s median (min–max) | vertices/s | ms/batch p50 | load (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['system']} | {r['workload']} | {r['bs']} | {r['threads']} | {r['mode']} | {r['runs']} | "
              f"{r['trees_per_s']:.1f} ({r['trees_per_s_min']:.1f}–{r['trees_per_s_max']:.1f}) | "
              f"{r['vertices_per_s']:,.0f} | {r['ms_p50']:.1f} | {r['load_median']} |")
else:
    print(f"{'system':24} {'workload':22} {'bs':>3} {'thr':>3} {'mode':5} {'runs':>4} {'trees/s':>9} "
          f"{'(min..max)':>15} {'vertices/s':>11} {'ms p50':>8} {'load':>5}")
    for r in rows:
        print(f"{r['system']:24} {r['workload']:22} {r['bs']:3} {r['threads']:3} {r['mode']:5} {r['runs']:4} "
              f"{r['trees_per_s']:9.1f} {r['trees_per_s_min']:7.1f}..{r['trees_per_s_max']:<7.1f} "
              f"{r['vertices_per_s']:11.0f} {r['ms_p50']:8.1f} {r['load_median']!s:>5}")

# Ratios per round: the i-th run of taihu against the i-th run of its PyTorch peer on the same
# configuration (the rounds alternate them), median and range.
PEERS = (("taihu-batched", "pytorch-p1"), ("taihu-lstm", "pytorch-nn.LSTM"), ("taihu-gru", "pytorch-nn.GRU"))


def workload_key(r):
    return r["workload"].replace("-variable", "")  # PyTorch names the variable-length PTB workload so


print("\ntaihu / PyTorch per round (vertices/s; median, range):")
for ours, theirs in PEERS:
    for key in sorted(k for k in groups if k[0] == ours):
        _, workload, bs, threads, mode = key
        peer = [rs for k, rs in groups.items()
                if k[0] == theirs and k[2:] == key[2:] and workload_key(rs[0]) == workload]
        if not peer:
            continue
        ratios = [a["vertices_per_s"] / b["vertices_per_s"] for a, b in zip(groups[key], peer[0])]
        print(f"  {ours:14} / {theirs:16} {workload:20} bs {bs:3} threads {threads} {mode:5}: "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), {len(ratios)} rounds")
