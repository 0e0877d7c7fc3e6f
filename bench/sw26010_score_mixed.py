#!/usr/bin/env python3
"""Scores the VGG-16 table of one SW26010 kernel report with its explicit entries taken from others.

The model runs the implicit kernels (swDNN's, whose DMA is synchronous) and the explicit GEMM
(swGEMM's plan, double-buffered) through one memory-level GEMM with one lock-step overlap
parameter. To see what a parameter does to the explicit passes alone, run the kernel report once
per value (`--config=` an edited copy of config/devices/sw26010.ini) and score each here against
the shipped report:

  python3 bench/sw26010_score_mixed.py bench/results/sw26010/kernel.json variant.json ...

Prints, per variant: entries within 15% (implicit entries scored with their layout transforms, as
the report does), how many of those are explicit, the chosen method against the published winner
per pass, and swGEMM's 1024^3 best, worst and the model's own block. The choice follows the report's
chosen_method and published_winner (bench/sw26010_kernel_level.hpp): the model takes implicit where
swCaffe's eligibility rule allows it (each entry's `implicit_eligible`) and it is the faster with
its transforms; the published winner is implicit only where it is strictly faster; passes without a
published explicit time are not compared.
"""
import json
import sys


def score(implicit_report, explicit_report):
    within = within_explicit = 0
    times = {}
    for imp, exp in zip(implicit_report["vgg16"], explicit_report["vgg16"]):
        assert (imp["layer"], imp["pass"], imp["method"]) == (exp["layer"], exp["pass"], exp["method"])
        entry = exp if imp["method"] == "explicit" else imp
        model = entry["model_s"] + entry["transforms_s"]
        published = entry["published_s"]
        if published is not None:
            ok = abs(model / published - 1) <= 0.15
            within += ok
            within_explicit += ok and imp["method"] == "explicit"
        pass_times = times.setdefault((imp["layer"], imp["pass"]), {"eligible": imp["implicit_eligible"]})
        pass_times[imp["method"]] = (model, published)
    matches = {"fwd": 0, "wgrad": 0, "dgrad": 0}
    for (_, pass_name), methods in times.items():
        explicit_model, explicit_published = methods["explicit"]
        if explicit_published is None:
            continue
        implicit_model, implicit_published = methods.get("implicit", (None, None))
        faster = implicit_model is not None and implicit_model < explicit_model
        chosen = "implicit" if methods["eligible"] and faster else "explicit"
        winner = "implicit" if implicit_published is not None and implicit_published < explicit_published else "explicit"
        matches[pass_name] += chosen == winner
    return within, within_explicit, matches


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    base = json.load(open(argv[1]))
    for path in argv[1:]:
        variant = json.load(open(path))
        within, within_explicit, matches = score(base, variant)
        g = variant["swgemm"]
        print(f"{path}: {within} of {len(base['vgg16'])} within 15% ({within_explicit} explicit); "
              f"method matches fwd {matches['fwd']} wgrad {matches['wgrad']} dgrad {matches['dgrad']}; "
              f"swGEMM 1024^3 best {g['best_gflops']:.1f} worst {g['worst_gflops']:.1f} "
              f"own block {g['chosen_gflops']:.1f} ({g['chosen_gflops'] / g['best_gflops']:.2f} of best)")


if __name__ == "__main__":
    main(sys.argv)
