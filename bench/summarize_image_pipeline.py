#!/usr/bin/python3
"""Medians over rounds of bench/compare_image_pipeline.sh's runs, as a table.

    /usr/bin/python3 bench/summarize_image_pipeline.py bench/results/image_pipeline

Reads taihu.jsonl and pytorch.jsonl there, writes summary.json and summary.csv,
prints Markdown tables (images/s, medians; in brackets the range over rounds).
"""
import json
import os
import statistics
import sys


def load(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    return rows


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "bench/results/image_pipeline"
    groups = {}
    for r in load(os.path.join(out, "taihu.jsonl")):
        groups.setdefault(("taihu", "taihu", r["case"], r["threads"]), []).append(r["images_per_second"])
    for r in load(os.path.join(out, "pytorch.jsonl")):
        groups.setdefault(("pytorch", r["variant"], r["case"], r["workers"]), []).append(r["images_per_second"])
    # torchvision's ImageFolder recipe in the default environment: out of the box
    for r in load(os.path.join(out, "pytorch_default_env.jsonl")):
        groups.setdefault(("pytorch", "pil-default-env", r["case"], r["workers"]), []).append(r["images_per_second"])
    summary = []
    for (system, variant, case, threads), rates in sorted(groups.items()):
        summary.append({"system": system, "variant": variant, "case": case, "threads": threads,
                        "runs": len(rates), "median": statistics.median(rates), "min": min(rates), "max": max(rates)})
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(out, "summary.csv"), "w") as f:
        f.write("system,variant,case,threads,runs,median,min,max\n")
        for s in summary:
            f.write(f"{s['system']},{s['variant']},{s['case']},{s['threads']},{s['runs']},{s['median']:.2f},"
                    f"{s['min']:.2f},{s['max']:.2f}\n")

    def get(system, variant, case, threads):
        return groups.get((system, variant, case, threads))

    def cell(rates):
        if not rates:
            return "—"
        return f"{statistics.median(rates):,.0f} ({min(rates):,.0f}–{max(rates):,.0f})"

    def med(rates):
        return statistics.median(rates) if rates else None

    torch_variants = ["pil-default-env", "pil", "pil-draft", "tvio", "pil-draft-u8", "tvio-u8"]
    names = {"pil-default-env": "PIL, out of the box", "pil": "PIL", "pil-draft": "PIL + draft",
             "tvio": "torchvision.io", "pil-draft-u8": "PIL + draft, uint8", "tvio-u8": "torchvision.io, uint8"}
    threads = sorted({k[3] for k in groups if k[0] == "taihu" and k[2] == "feed"} |
                     {k[3] for k in groups if k[0] == "pytorch" and k[2] == "loader" and k[3] > 0})
    settings = [("1 core, in-process (taihu ImageDataset on 1 thread; DataLoader num_workers=0)",
                 get("taihu", "taihu", "dataset", 1), 0)]
    for t in threads:
        plural = "s" if t > 1 else ""
        settings.append((f"{t} decoder{plural} / worker{plural} (taihu actor feed, batch 32; DataLoader, batch 32)",
                         get("taihu", "taihu", "feed", t), t))
    env = ""
    if os.path.exists(os.path.join(out, "env.txt")):
        env = open(os.path.join(out, "env.txt")).read()
    print("\n" + env)
    print("Batches delivered to the training process, images/s (median of rounds; range):\n")
    print("| setting | taihu | PyTorch out of the box | PyTorch best | variant | taihu / best | taihu / out of the box |")
    print("|---|---|---|---|---|---|---|")
    for name, taihu, workers in settings:
        rates = {v: get("pytorch", v, "loader", workers) for v in torch_variants}
        best_v = max((v for v in torch_variants if rates[v]), key=lambda v: med(rates[v]), default=None)
        best = med(rates[best_v]) if best_v else None
        box = med(rates["pil-default-env"])
        ratio = f"{med(taihu) / best:.2f}" if taihu and best else "—"
        ratio_box = f"{med(taihu) / box:.2f}" if taihu and box else "—"
        print(f"| {name} | {cell(taihu)} | {cell(rates['pil-default-env'])} | {cell(rates[best_v] if best_v else None)} "
              f"| {names.get(best_v, '—')} | {ratio} | {ratio_box} |")
    for t in sorted({k[3] for k in groups if k[0] == "taihu" and k[2] == "dataset"}):
        if t != 1:
            print(f"| taihu ImageDataset, {t} threads on disjoint samples | {cell(get('taihu', 'taihu', 'dataset', t))} "
                  "| | | | | |")

    print("\nEvery PyTorch variant, DataLoader, images/s (median; range):\n")
    print("| workers | " + " | ".join(names[v] for v in torch_variants) + " |")
    print("|---|" + "---|" * len(torch_variants))
    for _, _, workers in settings:
        print(f"| {workers} | " + " | ".join(cell(get("pytorch", v, "loader", workers)) for v in torch_variants) + " |")

    split_variants = ["pil", "pil-draft", "tvio"]
    print("\nThe split, one thread, images/s (ms/image):\n")
    print("| step | taihu | torchvision PIL | PIL + draft | torchvision.io |")
    print("|---|---|---|---|---|")

    def split_cell(rates):
        if not rates:
            return "—"
        m = statistics.median(rates)
        return f"{m:,.0f} ({1e3 / m:.2f} ms)"

    print(f"| read the file | {split_cell(get('taihu', 'taihu', 'read', 1))} | "
          f"{split_cell(get('pytorch', '-', 'read', 0))} | | |")
    print(f"| decode (taihu: DCT-scaled as in training) | {split_cell(get('taihu', 'taihu', 'decode', 1))} | " +
          " | ".join(split_cell(get("pytorch", v, "decode", 0)) for v in split_variants) + " |")
    print(f"| decode at full size | {split_cell(get('taihu', 'taihu', 'decode_full', 1))} | | | |")
    print(f"| transform (resize, crop, flip, normalise) | {split_cell(get('taihu', 'taihu', 'transform', 1))} | " +
          " | ".join(split_cell(get("pytorch", v, "transform", 0)) for v in split_variants) + " |")
    print(f"| whole sample (taihu read_sample; DataLoader num_workers=0) | "
          f"{split_cell(get('taihu', 'taihu', 'dataset', 1))} | " +
          " | ".join(split_cell(get("pytorch", v, "loader", 0)) for v in split_variants) + " |")


if __name__ == "__main__":
    main()
