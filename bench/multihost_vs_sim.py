#!/usr/bin/env python3
"""taihu-sim against the multi-host test bed: the table of bench/multihost_vs_sim.sh.

  multihost_vs_sim.py BUILD_DIR TOPOLOGY OUT_DIR

Reads what the shell script measured in OUT_DIR and prints predicted / measured / error for
every allreduce and training case. Every prediction is a taihu-sim run of TOPOLOGY
(config/topologies/testbed.ini) with the case's rate, size, algorithm and, for training, its
measured compute, and with keys measured on the bed in the same session (fit() says which runs
give which key; none is the predicted time). The fitted keys go to OUT_DIR/fitted.json.

Measured allreduce time: from the last rank's start to the last result (the ranks share one
clock on the bed), the median over the runs; the bench's own figure (the slowest rank's start
-> result, which adds the spread of the ranks' starts after MPI_Barrier) is shown beside it.
Measured iteration: taihu-train's median iteration_seconds; compute: its compute_seconds +
update_seconds (medians, the slowest worker), given to taihu-sim as compute_seconds.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

MIB = 1.048576  # MB per MiB: the bench counts MiB, taihu-sim MB


def goodput(rate_bits):
    """TCP payload bytes/s through a tbf of rate_bits: full frames of 1514 bytes carry 1448."""
    return rate_bits / 8 * 1448 / 1514


RATES = {"100mbit": 100e6, "1gbit": 1e9, "10gbit": 10e9, "100gbit": 100e9}


def sim(build, topology, keys):
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        args = [os.path.join(build, "apps", "taihu-sim"), "--config-file=" + topology, "--report=" + report.name,
                "--log-level=warn"] + ["%s=%s" % kv for kv in keys.items()]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        rows = json.load(open(report.name))
    return rows[0]


def at_rate(rate):
    return {"network.node_bandwidth": "%.6g" % goodput(RATES[rate])}


def samples(path):
    by = {}
    for line in open(path):
        r = json.loads(line)
        if r["run"] == 0:  # the warm-up
            continue
        tls = "on" if "between_hosts" in r["way"] else "off"
        by.setdefault((r["mb"], tls), []).append(r)
    return by


def med(rows, key):
    return statistics.median(r[key] for r in rows)


def spread(rows, key):
    v = sorted(r[key] for r in rows)
    return v[0], v[-1]


def solve(f, lo, hi, steps=40):
    """x in [lo, hi] with f(x) = 0, f increasing (bisection)."""
    for _ in range(steps):
        mid = (lo + hi) / 2
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def ring_bytes(mb):
    """Payload bytes a 4-rank ring allreduce of mb MiB sends, all ranks: 2(P-1) steps of S/P each."""
    return 6 * mb * MIB * 1e6


def fit(build, topology, runs):
    """The model's keys from runs measured in the same session, none of them a compared case:
    the CPU rates (send = receive, and TLS's) from the unshaped bed's 16 MiB ring, where the cores
    set the pace (tls off, then on); the per-message latency at each rate from its 64 KiB ring (16
    KiB messages: latency-bound). Each run is simulated with the cores the bed could get then
    (the probes)."""
    keys = {"network.latency": 1e-3, "network.send_cpu_rate": 1e9, "network.receive_cpu_rate": 1e9,
            "network.tls_cpu_rate": 1e9}
    latency = {}

    def time(rate, mb, tls, extra):
        rows = runs[rate][(mb, tls)]
        return sim(build, topology, {**at_rate(rate), **keys, "network.latency": latency.get(rate, 1e-3), **extra,
                                     "network.tls": tls, "simulation.size_mb": mb * MIB,
                                     "network.host_core_share": "%.4f" % min(1, med(rows, "cores") / 2)})["seconds"]

    def measured(rate, mb, tls):
        return med(runs[rate][(mb, tls)], "from_last_start")

    def fit_latency(rate):
        latency[rate] = solve(lambda a: time(rate, 0.0625, "off", {"network.latency": a}) -
                              measured(rate, 0.0625, "off"), 0.0, 0.05)

    if "100gbit" in runs:
        for _ in range(3):  # latency and CPU rate of the unshaped bed barely interact
            fit_latency("100gbit")
            rate = solve(lambda log_rate: measured("100gbit", 16, "off") - time(
                "100gbit", 16, "off", {"network.send_cpu_rate": math.exp(log_rate),
                                       "network.receive_cpu_rate": math.exp(log_rate)}), math.log(1e7), math.log(1e12))
            keys["network.send_cpu_rate"] = keys["network.receive_cpu_rate"] = math.exp(rate)
        keys["network.tls_cpu_rate"] = math.exp(solve(lambda log_rate: measured("100gbit", 16, "on") - time(
            "100gbit", 16, "on", {"network.tls_cpu_rate": math.exp(log_rate)}), math.log(1e7), math.log(1e12)))
    for rate in runs:
        if rate != "100gbit":
            fit_latency(rate)
    return {rate: {**{k: "%.4g" % v for k, v in keys.items()}, "network.latency": "%.4g" % latency[rate]}
            for rate in runs}


def training_case(out, name, rate):
    """A training run's report and the cores the bed could get while it ran (the probes)."""
    r = json.load(open(os.path.join(out, "train-%s-%s.json" % (name, rate))))
    path = os.path.join(out, "cores-train-%s-%s.txt" % (name, rate))
    return r, float(open(path).read()) if os.path.exists(path) else 2.0


def predict_training(build, topology, out, name, rate, keys, tls=None):
    """taihu-sim's iteration for a training run, as taihu-train ran it: the measured forward +
    backward; each bucket's collective (dense ones as their allreduce, RedSync's compressed ones
    as a sparse allgather of density 0.001) from when backward handed it over (the report's
    ready_seconds, the slowest worker's); each rank's CPU work on the bucket before and after
    its collective and the unpacking of its sum after backward (compress_seconds,
    decompress_seconds, unpack_seconds: RedSync's compressor step, the sum of the gathered
    messages, the copy into the gradients) as jobs on the hosts' cores; then the measured
    solver step. A report without ready_seconds (before they were measured) has every bucket start
    when backward ends; one without the CPU times leaves them to compress_rate."""
    r, cores = training_case(out, name, rate)
    compute, update = r["compute_seconds"], r["update_seconds"]
    buckets = " ".join("%d@%.6g:%s" % (b["elements"], min(b.get("ready_seconds", compute), compute),
                                       "sparse_allgather" if "compressed" in b["algorithm"] else b["algorithm"])
                       for b in r["buckets"])
    work = {"simulation." + key: " ".join("%.6g" % b[key] for b in r["buckets"])
            for key in ("compress_seconds", "decompress_seconds", "unpack_seconds")
            if all(key in b for b in r["buckets"])}
    d = sim(build, topology, {**at_rate(rate), **keys, "simulation.compute_seconds": "%.6g" % compute,
                              "simulation.update_seconds": "%.6g" % update, "simulation.buckets": buckets,
                              "simulation.density": "0.001", "simulation.spread": "0", **work,
                              "network.tls": tls or "on", "network.host_core_share": "%.4f" % min(1, cores / 2)})
    return r, {"seconds": d["seconds"], "compute": compute + update, "sent": d["bytes"], "cores": cores}


def fit_training(build, topology, out):
    """Keys for the training cases, fitted to the training runs on the unshaped bed (calibrate):
    send/receive_cpu_rate to AlexNet-BN with tls = off, tls_cpu_rate to AlexNet-BN with TLS,
    latency to LeNet with TLS; each run simulated with its measured compute and cores."""
    names = ("calib-alexnet-off", "calib-alexnet", "calib-lenet")
    if not all(os.path.exists(os.path.join(out, "train-%s-100gbit.json" % n)) for n in names):
        return None
    keys = {"network.latency": 1e-3, "network.send_cpu_rate": 1e9, "network.receive_cpu_rate": 1e9,
            "network.tls_cpu_rate": 1e9}

    def error(name, tls, extra):
        r, p = predict_training(build, topology, out, name, "100gbit", {**keys, **extra}, tls)
        return p["seconds"] - r["iteration_seconds"]

    for _ in range(3):
        log_rate = solve(lambda x: -error("calib-alexnet-off", "off", {"network.send_cpu_rate": math.exp(x),
                                                                      "network.receive_cpu_rate": math.exp(x)}),
                         math.log(1e7), math.log(1e12))
        keys["network.send_cpu_rate"] = keys["network.receive_cpu_rate"] = math.exp(log_rate)
        keys["network.tls_cpu_rate"] = math.exp(solve(
            lambda x: -error("calib-alexnet", "on", {"network.tls_cpu_rate": math.exp(x)}), math.log(1e7),
            math.log(1e12)))
        keys["network.latency"] = solve(lambda a: error("calib-lenet", "on", {"network.latency": a}), 0.0, 0.05)
    return {k: "%.4g" % v for k, v in keys.items()}


def row(case, predicted, measured, note=""):
    error = (predicted - measured) / measured
    mark = "" if abs(error) <= 0.10 else "  <-- misses 10%"
    print("| %s | %.1f | %.1f | %+.1f%% | %s%s |" % (case, 1e3 * predicted, 1e3 * measured, 100 * error, note, mark))
    return error


def main():
    build, topology, out = sys.argv[1:4]
    errors = []
    for rate in ("1gbit", "100mbit"):
        path = os.path.join(out, "flow-%s.jsonl" % rate)
        if os.path.exists(path):
            big = [json.loads(line) for line in open(path)][-1]
            print("one TCP flow at %s: %.4g B/s (the model's node_bandwidth %.4g)" %
                  (rate, big["goodput"], goodput(RATES[rate])))
    runs = {rate: samples(os.path.join(out, "allreduce-%s.jsonl" % rate)) for rate in ("1gbit", "100gbit")
            if os.path.exists(os.path.join(out, "allreduce-%s.jsonl" % rate))}
    fitted = fit(build, topology, runs) if runs else {}
    for rate, by in sorted(runs.items(), key=lambda kv: RATES[kv[0]]):
        keys = fitted[rate]
        print("\n4 hosts at %s, ring allreduce (median of %d runs; keys: latency %s s from this rate's 64 KiB "
              "runs, send/receive_cpu_rate %s and tls_cpu_rate %s B/s per core from the unshaped 16 MiB runs%s)" %
              (rate, len(by[(16, "off")]), keys["network.latency"], keys["network.send_cpu_rate"],
               keys["network.tls_cpu_rate"], ", which are fitted, not predicted" if rate == "100gbit" else ""))
        print("\n| case | predicted ms | measured ms | error | measured range; bench figure; cores the bed got |\n"
              "|---|---|---|---|---|")
        for (mb, tls), rows in sorted(by.items()):
            if mb == 0.0625:
                continue
            cores = med(rows, "cores")
            p = sim(build, topology, {**at_rate(rate), **keys, "network.tls": tls, "simulation.size_mb": mb * MIB,
                                      "network.host_core_share": "%.4f" % min(1, cores / 2)})
            lo, hi = spread(rows, "from_last_start")
            e = row("%g MiB, tls %s" % (mb, tls), p["seconds"], med(rows, "from_last_start"),
                    "[%.1f..%.1f]; %.1f; %.2f" % (1e3 * lo, 1e3 * hi, 1e3 * med(rows, "seconds"), cores))
            if not (rate == "100gbit" and mb == 16):
                errors.append(e)
    train_keys = fit_training(build, topology, out)
    trains = sorted(f for f in os.listdir(out) if f.startswith("train-") and f.endswith(".json")
                    and not f.startswith("train-calib-"))
    if trains and train_keys:
        print("\n4 hosts (coordinator + taihu-node on h1..h4), training iterations (measured: median iteration; "
              "compute: the slowest worker's forward + backward + solver step, median, given to taihu-sim; keys: "
              "latency %s s, send/receive_cpu_rate %s, tls_cpu_rate %s B/s per core, fitted to the unshaped "
              "calibration runs)\n" % (train_keys["network.latency"], train_keys["network.send_cpu_rate"],
                                        train_keys["network.tls_cpu_rate"]))
        print("| case | predicted ms | measured ms | error | compute ms; CPU ms per rank around the collectives "
              "(compress + decompress + unpack); sent MB per rank (measured / simulated); cores the bed got |\n"
              "|---|---|---|---|---|")
        for f in trains:
            name, rate = f[len("train-"):-len(".json")].rsplit("-", 1)
            r, p = predict_training(build, topology, out, name, rate, train_keys)
            around = sum(b.get(k, 0) for b in r["buckets"]
                         for k in ("compress_seconds", "decompress_seconds", "unpack_seconds"))
            errors.append(row("%s at %s" % (name, rate), p["seconds"], r["iteration_seconds"],
                              "%.1f; %.1f; %.2f / %.2f; %.2f" % (1e3 * p["compute"], 1e3 * around,
                                                                 r["bytes_sent_per_iteration"] / 4e6, p["sent"] / 4e6,
                                                                 p["cores"])))
    if errors:
        print("\n%d of %d cases within 10%%" % (sum(abs(e) <= 0.10 for e in errors), len(errors)))
    json.dump({"allreduce": fitted, "training": train_keys}, open(os.path.join(out, "fitted.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
