#!/usr/bin/env python3
"""Training curves of taihu-train runs as one SVG, without dependencies.

    python3 bench/plot_curves.py OUT.svg "title" LABEL=metrics.jsonl [LABEL=metrics.jsonl ...]

Left panel: training loss (the `train` rows, every `display` iterations);
right panel: test accuracy after each epoch (the `test` rows), or test
perplexity, exp(test_loss), for language models (the `eval` rows).
"""
import json
import math
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
W, H, PAD = 460, 320, 50


def read(path):
    train, test, perplexity = [], [], []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("type") == "train":
                train.append((row["iteration"], row["loss"]))
            elif row.get("type") == "test":
                test.append((row["iteration"], 100.0 * row["accuracy"]))
            elif row.get("type") == "eval" and "test_loss" in row:
                perplexity.append((row["iteration"], math.exp(row["test_loss"])))
    # Sequence models log eval rows only: plot their perplexity.
    return (train, test, False) if test or not perplexity else (train, perplexity, True)


def panel(x0, title, series, ylabel, markers):
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    if not xs:
        return ""
    xmin, xmax = 0, max(xs)
    ymin, ymax = min(ys), max(ys)
    if ymax == ymin:
        ymax = ymin + 1
    pad = 0.05 * (ymax - ymin)
    ymin, ymax = ymin - pad, ymax + pad

    def sx(x):
        return x0 + PAD + (x - xmin) / (xmax - xmin or 1) * (W - 1.5 * PAD)

    def sy(y):
        return H - PAD - (y - ymin) / (ymax - ymin) * (H - 2 * PAD)

    out = [f'<text x="{x0 + W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<rect x="{x0 + PAD}" y="{PAD}" width="{W - 1.5 * PAD}" height="{H - 2 * PAD}" fill="none" stroke="#888"/>']
    for i in range(5):
        y = ymin + (ymax - ymin) * i / 4
        out.append(f'<text x="{x0 + PAD - 4}" y="{sy(y) + 4}" text-anchor="end" font-size="10">{y:.3g}</text>')
        x = xmin + (xmax - xmin) * i / 4
        out.append(f'<text x="{sx(x)}" y="{H - PAD + 14}" text-anchor="middle" font-size="10">{x:.0f}</text>')
    out.append(f'<text x="{x0 + W / 2}" y="{H - 12}" text-anchor="middle" font-size="11">iteration</text>')
    out.append(f'<text x="{x0 + 12}" y="{H / 2}" font-size="11" transform="rotate(-90 {x0 + 12} {H / 2})" '
               f'text-anchor="middle">{ylabel}</text>')
    for k, (label, pts) in enumerate(series):
        color = COLORS[k % len(COLORS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        if markers:
            for x, y in pts:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>')
                out.append(f'<text x="{sx(x) - 4:.1f}" y="{sy(y) - 6 - 10 * k:.1f}" font-size="9" fill="{color}" '
                           f'text-anchor="end">{y:.2f}</text>')
        out.append(f'<text x="{x0 + W - PAD}" y="{PAD + 14 + 14 * k}" text-anchor="end" font-size="11" '
                   f'fill="{color}">{label}</text>')
    return "\n".join(out)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, title = sys.argv[1], sys.argv[2]
    runs = []
    for arg in sys.argv[3:]:
        label, path = arg.rsplit("=", 1)
        runs.append((label, *read(path)))
    lm = any(is_lm for _, _, _, is_lm in runs)
    body = [panel(0, f"{title}: training loss", [(l, tr) for l, tr, _, _ in runs], "loss", False),
            panel(W, f"{title}: test {'perplexity' if lm else 'accuracy'}", [(l, te) for l, _, te, _ in runs],
                  "perplexity" if lm else "accuracy %", True)]
    with open(out, "w") as f:
        f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W}" height="{H}" font-family="sans-serif">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")


if __name__ == "__main__":
    main()
