#!/usr/bin/env python3
"""Summary of bench/scaling_cores.sh's rows: per model, case and thread count,
the median rate over rounds for taihu and PyTorch, each one's speed-up over its
own one-thread rate, and taihu / PyTorch; then each side at its best thread
count, since a framework that slows down past some count would be run there.
Reads whatever rows exist, so a run cut short still summarises.

    python3 bench/summarize_scaling.py [OUT_DIR]   (default bench/results/scaling)
"""
import json
import statistics
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "bench/results/scaling"


def rows(name):
    try:
        with open(f"{OUT}/{name}.jsonl") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def medians(name, key_of, rate):
    """{(case, threads): (median rate, number of runs)}"""
    groups = {}
    for row in rows(name):
        groups.setdefault(key_of(row), []).append(row[rate])
    return {k: (statistics.median(v), len(v)) for k, v in groups.items()}


def number(x):
    return "—" if x is None else f"{x:.1f}"


def speedup(x, base):
    return "—" if x is None or not base else f"{x / base:.2f}×"


def table(title, taihu, torch):
    print(f"\n### {title}\n")
    print("| case | threads | taihu | speed-up | PyTorch | speed-up | taihu / PyTorch | runs |")
    print("|---|---|---|---|---|---|---|---|")
    cases = sorted({k[0] for k in list(taihu) + list(torch)})
    for case in cases:
        base_a = taihu.get((case, 1), (None,))[0]
        base_b = torch.get((case, 1), (None,))[0]
        for t in sorted({k[1] for k in list(taihu) + list(torch) if k[0] == case}):
            a, na = taihu.get((case, t), (None, 0))
            b, nb = torch.get((case, t), (None, 0))
            ratio = "—" if a is None or b is None else f"**{a / b:.2f}×**"
            print(f"| {case} | {t} | {number(a)} | {speedup(a, base_a)} | {number(b)} | {speedup(b, base_b)} "
                  f"| {ratio} | {na} / {nb} |")
    print()
    for case in cases:
        best = {}
        for side, rates in (("taihu", taihu), ("PyTorch", torch)):
            mine = [(v[0], k[1]) for k, v in rates.items() if k[0] == case]
            if mine:
                best[side] = max(mine)
        if len(best) == 2:
            (a, ta), (b, tb) = best["taihu"], best["PyTorch"]
            print(f"- {case}, each at its best thread count: taihu {a:.1f} ({ta} threads), "
                  f"PyTorch {b:.1f} ({tb} threads): **{a / b:.2f}×**")


table("ResNet-50 training, images/s",
      medians("taihu_resnet50", lambda r: (f"batch {r['batch']}", r["threads"]), "images_per_second"),
      medians("pytorch_resnet50", lambda r: (f"batch {r['batch']}", r["threads_requested"]), "images_per_second"))
table("Tree-LSTM training (E 300, H 150, SST-like trees), trees/s",
      medians("taihu_treelstm", lambda r: (f"batch {r['bs']}", r["threads"]), "trees_per_s"),
      medians("pytorch_treelstm", lambda r: (f"batch {r['bs']}", r["threads"]), "trees_per_s"))
