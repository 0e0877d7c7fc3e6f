#!/usr/bin/python3
"""PyTorch CPU baseline for taihu's Cavs Tree-LSTM benchmark.

Binary N-ary Tree-LSTM (Tai et al. 2015, N = 2, U applied to [h_l; h_r], one
forget gate per child), trained with a 5-class cross-entropy at every labelled
vertex, summed, and plain SGD. Trees come from a taihu tree workload file
(build/bench/make_tree_workload; format in bench/pytorch/tree_workload.py).

Two implementations of the same model:
  P0  per-node: one embedding lookup per batch, then one small op chain per
      vertex in topological order (what "define-by-run, no batching" costs)
  P1  level-batched v2: vertices of every tree in the batch grouped by height;
      one GEMM per matrix per level; children's states gathered from per-level
      buffers with index lists, so the gathers cost O(N) in all (no global
      state buffer that index_select's backward would zero-fill per level)

Model (row-vector convention, x @ W; H hidden, E embedding, C classes):
  leaf v:     z = emb[token] @ W_iou + b_iou            i,o = sigmoid, u = tanh
              c = i * u ; h = o * tanh(c)
  internal v: hh = [h_l ; h_r]                          (1 x 2H)
              z = hh @ U_iou + b_iou                     i,o = sigmoid, u = tanh
              f = sigmoid(hh @ U_f + [b_f ; b_f])        f_l, f_r = halves
              c = i * u + f_l * c_l + f_r * c_r ; h = o * tanh(c)
  loss = sum over vertices with label >= 0 of CE(h @ W_out + b_out, label)
  Internal vertices carry no token (SST); a workload that gives them tokens is
  rejected. Column blocks of W_iou, U_iou, b_iou are in the order i | o | u.

Initial weights from raw files (--init-weights DIR), e.g. written by taihu:
  every file raw little-endian float32, row-major, no header:
    embedding.f32  V  x E
    W_iou.f32      E  x 3H   (columns i | o | u)
    b_iou.f32      3H
    U_iou.f32      2H x 3H   (rows: h_l's H rows, then h_r's)
    U_f.f32        2H x 2H   (rows as U_iou; columns f_l | f_r)
    b_f.f32        H         (shared by both children's forget gates)
    W_out.f32      H  x C
    b_out.f32      C
  --dump-weights DIR writes this script's initial weights in the same layout.
  --loss-trace N prints (and stores in the JSON row) the forward loss of the
  first N training steps: with the same initial weights, same workload, batch
  and lr, taihu's losses must match these.

Tuning (cavs.md §8.1-8.2), on unless --untuned:
  OPENBLAS_NUM_THREADS=1 (set before torch loads OpenBLAS), torch threads =
  --threads (default: all cores), torch.set_flush_denormal(True), and
  OPENBLAS_CORETYPE=SkylakeX only if /proc/cpuinfo shows avx512f (forcing it
  on a CPU without AVX-512 dies with SIGILL; there OpenBLAS's own detection,
  Haswell kernels on AMD Zen, is kept). The chosen core is reported.

Timing: --warmup untimed batches, then --batches timed batches repeated
--repeats times (the same batches each time); one JSON object per line and
one CSV row per run; trees/s is the median over repeats, ms_p50/ms_p90 are
over every timed batch. The level schedule of each batch is built before
timing (like a data loader would) unless --schedule-in-step; its cost is
reported as schedule_ms.

  /usr/bin/python3 bench/pytorch/treelstm_baseline.py --workload build/workloads/sst-like.txt \\
      --impl p1 --batch 25 --threads 2
"""

import os
import sys


def _has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512f" in line.split()
    except OSError:
        pass
    return False


# OpenBLAS reads its environment when torch loads it, so set it first.
if "--untuned" not in sys.argv:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if _has_avx512():
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

import argparse  # noqa: E402
import csv  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allocator import allocator_in_use  # noqa: E402
from tree_workload import read_workload  # noqa: E402

SPARSE_EMBEDDING = False  # --sparse-embedding

CSV_FIELDS = ("system", "workload", "bs", "E", "H", "threads", "mode", "trees_per_s", "vertices_per_s",
              "ms_p50", "ms_p90", "rounds", "gemm_calls", "rss_mb", "ftz")


# ---------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------

def weight_shapes(V, E, H, C):
    return {
        "embedding": (V, E), "W_iou": (E, 3 * H), "b_iou": (3 * H,), "U_iou": (2 * H, 3 * H),
        "U_f": (2 * H, 2 * H), "b_f": (H,), "W_out": (H, C), "b_out": (C,),
    }


def init_weights(V, E, H, C, seed):
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in weight_shapes(V, E, H, C).items():
        if name.startswith("b_"):
            w[name] = torch.zeros(shape)
        elif name == "embedding":
            w[name] = torch.empty(shape).uniform_(-0.1, 0.1, generator=g)
        else:
            bound = (6.0 / (shape[0] + shape[1])) ** 0.5
            w[name] = torch.empty(shape).uniform_(-bound, bound, generator=g)
    return w


def load_weights(directory, V, E, H, C):
    w = {}
    for name, shape in weight_shapes(V, E, H, C).items():
        path = os.path.join(directory, name + ".f32")
        if not os.path.exists(path):
            sys.exit(f"--init-weights: {path} is missing (expected {' x '.join(map(str, shape))} float32)")
        data = np.fromfile(path, dtype="<f4")
        expected = int(np.prod(shape))
        if data.size != expected:
            sys.exit(f"--init-weights: {path} holds {data.size} floats, expected {expected} "
                     f"({' x '.join(map(str, shape))})")
        w[name] = torch.from_numpy(data.astype(np.float32).reshape(shape))
    return w


def dump_weights(directory, weights):
    os.makedirs(directory, exist_ok=True)
    for name, t in weights.items():
        t.detach().numpy().astype("<f4").tofile(os.path.join(directory, name + ".f32"))


# ---------------------------------------------------------------------------
# P0: per node
# ---------------------------------------------------------------------------

class PerNode:
    """One op chain per vertex. The batch's leaf embeddings are looked up at
    once and split into rows with unbind (whose backward stacks the row
    gradients in O(N); slicing rows one by one would zero-fill a full-size
    gradient per slice, and a lookup per tree a dense V x E gradient per tree)."""

    def __init__(self, trees):
        tokens, self.leaf_row = [], []
        for t in trees:
            rows = np.full(len(t), -1, dtype=np.int64)
            leaves = np.nonzero(t.left < 0)[0]
            rows[leaves] = np.arange(len(tokens), len(tokens) + len(leaves))
            tokens.extend(t.tokens[leaves].tolist())
            self.leaf_row.append(rows.tolist())
        self.tokens = torch.tensor(tokens, dtype=torch.int64)
        self.trees = trees
        self.labels = [torch.from_numpy(t.labels) for t in trees]
        self.rounds = sum(len(t) for t in trees)
        self.gemm_calls = self.rounds + len(trees)  # forward: 1-2 per vertex, 1 output per tree

    def loss(self, w):
        H = w["b_f"].shape[0]
        b_f2 = torch.cat([w["b_f"], w["b_f"]])
        xs = F.embedding(self.tokens, w["embedding"], sparse=SPARSE_EMBEDDING).unsqueeze(1).unbind(0)
        total = 0.0
        for t, leaf_row, labels in zip(self.trees, self.leaf_row, self.labels):
            hs, cs = [], []
            left, right = t.left.tolist(), t.right.tolist()
            for v in range(len(t)):
                l = left[v]
                if l < 0:
                    z = torch.addmm(w["b_iou"], xs[leaf_row[v]], w["W_iou"])
                    s = torch.sigmoid(z[:, :2 * H])
                    c = s[:, :H] * torch.tanh(z[:, 2 * H:])
                else:
                    r = right[v]
                    hh = torch.cat([hs[l], hs[r]], 1)
                    z = torch.addmm(w["b_iou"], hh, w["U_iou"])
                    f = torch.sigmoid(torch.addmm(b_f2, hh, w["U_f"]))
                    s = torch.sigmoid(z[:, :2 * H])
                    c = s[:, :H] * torch.tanh(z[:, 2 * H:]) + f[:, :H] * cs[l] + f[:, H:] * cs[r]
                hs.append(s[:, H:] * torch.tanh(c))
                cs.append(c)
            logits = torch.addmm(w["b_out"], torch.cat(hs, 0), w["W_out"])
            total = total + F.cross_entropy(logits, labels, ignore_index=-1, reduction="sum")
        return total


# ---------------------------------------------------------------------------
# P1: level-batched v2
# ---------------------------------------------------------------------------

class LevelSchedule:
    """Index lists for one batch: vertices grouped by height; for every level
    the children's positions in the per-level buffers they live in."""

    def __init__(self, trees):
        sizes = [len(t) for t in trees]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        heights = np.concatenate([t.heights for t in trees])
        left = np.concatenate([np.where(t.left >= 0, t.left + o, -1) for t, o in zip(trees, offsets)])
        right = np.concatenate([np.where(t.right >= 0, t.right + o, -1) for t, o in zip(trees, offsets)])
        tokens = np.concatenate([t.tokens for t in trees])
        labels = np.concatenate([t.labels for t in trees])
        order = np.argsort(heights, kind="stable")
        level_sizes = np.bincount(heights)
        position = np.empty_like(order)  # position of each vertex within its level
        starts = np.concatenate([[0], np.cumsum(level_sizes)[:-1]])
        position[order] = np.arange(len(order)) - starts[heights[order]]
        leaves = order[:level_sizes[0]]
        if (left[leaves] >= 0).any():
            raise ValueError("a height-0 vertex has a child")
        self.leaf_tokens = torch.from_numpy(tokens[leaves])
        if (self.leaf_tokens < 0).any():
            raise ValueError("a leaf has no token")
        internal = order[level_sizes[0]:]
        if (tokens[internal] >= 0).any():
            raise ValueError("internal vertices with tokens are not supported by this model")
        if (right[internal] < 0).any():
            raise ValueError("the Tree-LSTM baseline needs binary trees (every internal vertex has 2 children)")
        self.levels = []  # per level >= 1: (n, [(source level, index tensor)], inverse permutation or None)
        for level in range(1, len(level_sizes)):
            vs = order[starts[level]:starts[level] + level_sizes[level]]
            # Child slots interleaved per parent: (v0 left, v0 right, v1 left, ...).
            slots = np.stack([left[vs], right[vs]], 1).reshape(-1)
            src = heights[slots]
            by_source = np.argsort(src, kind="stable")
            sources = []
            for s in np.unique(src):
                chosen = slots[by_source[src[by_source] == s]]
                sources.append((int(s), torch.from_numpy(position[chosen])))
            inverse = None
            if not np.array_equal(by_source, np.arange(len(slots))):
                inv = np.empty_like(by_source)
                inv[by_source] = np.arange(len(slots))
                inverse = torch.from_numpy(inv)
            self.levels.append((len(vs), sources, inverse))
        self.labels = torch.from_numpy(labels[order])
        self.rounds = len(level_sizes)
        self.gemm_calls = 1 + 2 * (len(level_sizes) - 1) + 1


class LevelBatched:
    def __init__(self, trees, schedule_in_step):
        self.trees = trees
        self.schedule_in_step = schedule_in_step
        start = time.perf_counter()
        self.schedule = None if schedule_in_step else LevelSchedule(trees)
        self.schedule_ms = (time.perf_counter() - start) * 1e3
        probe = self.schedule or LevelSchedule(trees)
        self.rounds, self.gemm_calls = probe.rounds, probe.gemm_calls

    def loss(self, w):
        sch = self.schedule or LevelSchedule(self.trees)
        H = w["b_f"].shape[0]
        b_f2 = torch.cat([w["b_f"], w["b_f"]])
        x = F.embedding(sch.leaf_tokens, w["embedding"], sparse=SPARSE_EMBEDDING)
        z = torch.addmm(w["b_iou"], x, w["W_iou"])
        s = torch.sigmoid(z[:, :2 * H])
        c = s[:, :H] * torch.tanh(z[:, 2 * H:])
        h = s[:, H:] * torch.tanh(c)
        hs = [h]
        states = [torch.cat([h, c], 1)]  # per level: rows [h | c]
        for n, sources, inverse in sch.levels:
            parts = [states[level].index_select(0, idx) for level, idx in sources]
            g = parts[0] if len(parts) == 1 else torch.cat(parts, 0)
            if inverse is not None:
                g = g.index_select(0, inverse)
            g = g.view(n, 2, 2, H)  # parent, child (l/r), h/c, H
            hh = g[:, :, 0, :].reshape(n, 2 * H)
            z = torch.addmm(w["b_iou"], hh, w["U_iou"])
            f = torch.sigmoid(torch.addmm(b_f2, hh, w["U_f"]))
            s = torch.sigmoid(z[:, :2 * H])
            c = s[:, :H] * torch.tanh(z[:, 2 * H:]) + (f.view(n, 2, H) * g[:, :, 1, :]).sum(1)
            h = s[:, H:] * torch.tanh(c)
            hs.append(h)
            states.append(torch.cat([h, c], 1))
        logits = torch.addmm(w["b_out"], torch.cat(hs, 0), w["W_out"])
        return F.cross_entropy(logits, sch.labels, ignore_index=-1, reduction="sum")


# ---------------------------------------------------------------------------
# Environment reporting (as in pytorch_baseline.py)
# ---------------------------------------------------------------------------

def openblas_info():
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line}
    except OSError:
        return None
    for path in sorted(paths):
        if not path.startswith("/") or "libopenblas" not in os.path.basename(path):
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            return {"library": path, "corename": lib.openblas_get_corename().decode(),
                    "config": lib.openblas_get_config().decode().strip(),
                    "num_threads": lib.openblas_get_num_threads()}
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


def environment(args, ftz):
    return {
        "torch_version": torch.__version__, "python": platform.python_version(),
        "threads": torch.get_num_threads(), "flush_denormal": ftz, "openblas": openblas_info(),
        "allocator": allocator_in_use(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")},
        "avx512": _has_avx512(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
        "loadavg": os.getloadavg(), "tuned": not args.untuned,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def write_rows(args, row, result):
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    if args.csv:
        new = not os.path.exists(args.csv) or os.path.getsize(args.csv) == 0
        with open(args.csv, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
            if new:
                writer.writeheader()
            writer.writerow(row)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--workload", required=True, help="tree workload file (make_tree_workload)")
    p.add_argument("--impl", choices=("p0", "p1"), default="p1", help="p0 per node, p1 level-batched v2")
    p.add_argument("--mode", choices=("train", "infer"), default="train")
    p.add_argument("--batch", type=int, default=25)
    p.add_argument("--embed", type=int, default=300)
    p.add_argument("--hidden", type=int, default=150)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batches", type=int, default=20, help="timed batches per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: all cores)")
    p.add_argument("--untuned", action="store_true",
                   help="out of the box: no OPENBLAS_* settings, torch's own thread count, no flush-to-zero")
    p.add_argument("--schedule-in-step", action="store_true", help="build P1's level schedule inside the timed step")
    p.add_argument("--sparse-embedding", action="store_true", help="sparse embedding gradient (default dense)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--init-weights", metavar="DIR", help="load initial weights (layout above)")
    p.add_argument("--dump-weights", metavar="DIR", help="write the initial weights (layout above)")
    p.add_argument("--loss-trace", type=int, default=0, metavar="N", help="record the first N training losses")
    p.add_argument("--self-check", action="store_true",
                   help="compare P0 and P1 loss and gradients on the first batch, then exit")
    p.add_argument("--system", help="system name in the rows (default pytorch-p0/p1[-untuned])")
    p.add_argument("--json", metavar="FILE", help="append one JSON object")
    p.add_argument("--csv", metavar="FILE", help="append one CSV row")
    args = p.parse_args()
    for name in ("batch", "batches", "repeats", "embed", "hidden"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def self_check(workload, weights, batch):
    trees = workload.trees[:batch]
    results = {}
    for name, impl in (("p0", PerNode(trees)), ("p1", LevelBatched(trees, False))):
        w = {k: v.clone().requires_grad_(True) for k, v in weights.items()}
        loss = impl.loss(w)
        loss.backward()
        results[name] = (loss.item(), {k: v.grad for k, v in w.items()})
    (l0, g0), (l1, g1) = results["p0"], results["p1"]
    worst = max(((g0[k] - g1[k]).abs().max() / g0[k].abs().max().clamp_min(1e-30)).item() for k in g0)
    rel = abs(l0 - l1) / abs(l0)
    print(f"self-check on {len(trees)} trees: loss p0 {l0:.6f} p1 {l1:.6f} (rel {rel:.2e}); "
          f"largest gradient difference relative to the gradient's max {worst:.2e}")
    return rel < 1e-5 and worst < 1e-4


def main():
    global SPARSE_EMBEDDING
    args = parse_args()
    SPARSE_EMBEDDING = args.sparse_embedding
    ftz = False
    if not args.untuned:
        ftz = torch.set_flush_denormal(True)
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    workload = read_workload(args.workload)
    for i, t in enumerate(workload.trees):
        internal = t.left >= 0
        if t.max_arity > 2 or (internal & (t.right < 0)).any():
            sys.exit(f"{args.workload}: tree {i} is not a full binary tree (every internal vertex needs 2 children)")
        if (t.tokens[internal] >= 0).any() or (t.tokens[~internal] < 0).any():
            sys.exit(f"{args.workload}: tree {i}: this model needs a token at every leaf and none elsewhere")
    V, C, E, H = workload.vocabulary_size, workload.num_classes, args.embed, args.hidden
    weights = (load_weights(args.init_weights, V, E, H, C) if args.init_weights
               else init_weights(V, E, H, C, args.seed))
    if args.dump_weights:
        dump_weights(args.dump_weights, weights)
    if args.self_check:
        sys.exit(0 if self_check(workload, weights, args.batch) else 1)

    params = {k: v.clone().requires_grad_(True) for k, v in weights.items()}
    needed = args.warmup + args.batches
    if needed * args.batch > len(workload.trees):
        sys.exit(f"{args.workload} has {len(workload.trees)} trees; {args.warmup} + {args.batches} batches of "
                 f"{args.batch} need {needed * args.batch}")
    batches = []
    for b in range(needed):
        trees = workload.trees[b * args.batch:(b + 1) * args.batch]
        impl = PerNode(trees) if args.impl == "p0" else LevelBatched(trees, args.schedule_in_step)
        batches.append((impl, len(trees), sum(len(t) for t in trees)))
    schedule_ms = [b[0].schedule_ms for b in batches if hasattr(b[0], "schedule_ms")]

    lr = args.lr
    train = args.mode == "train"
    losses = []

    def step(impl):
        if not train:
            with torch.no_grad():
                return impl.loss(params).item()
        loss = impl.loss(params)
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p.add_(p.grad, alpha=-lr)
                p.grad = None
        return loss.item()

    for i in range(args.warmup):
        loss = step(batches[i][0])
        if len(losses) < args.loss_trace:
            losses.append(loss)
    timed = batches[args.warmup:]
    rates, vrates, times = [], [], []
    for _ in range(args.repeats):
        elapsed = 0.0
        for impl, _, _ in timed:
            start = time.perf_counter()
            loss = step(impl)
            dt = time.perf_counter() - start
            if len(losses) < args.loss_trace:
                losses.append(loss)
            elapsed += dt
            times.append(dt * 1e3)
        rates.append(sum(b[1] for b in timed) / elapsed)
        vrates.append(sum(b[2] for b in timed) / elapsed)
    if not np.isfinite(loss):
        print("warning: loss is not finite; try a smaller --lr", file=sys.stderr)

    system = args.system or f"pytorch-{args.impl}" + ("-untuned" if args.untuned else "")
    times_sorted = np.array(times)
    row = {
        "system": system, "workload": workload.name, "bs": args.batch, "E": E, "H": H,
        "threads": torch.get_num_threads(), "mode": args.mode,
        "trees_per_s": round(statistics.median(rates), 2), "vertices_per_s": round(statistics.median(vrates), 1),
        "ms_p50": round(float(np.percentile(times_sorted, 50)), 3),
        "ms_p90": round(float(np.percentile(times_sorted, 90)), 3),
        "rounds": round(statistics.mean(b[0].rounds for b in timed), 2),
        "gemm_calls": round(statistics.mean(b[0].gemm_calls for b in timed), 2),
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "ftz": int(bool(ftz)),
    }
    result = dict(row)
    result.update({
        "impl": args.impl, "workload_file": os.path.abspath(args.workload), "lr": lr,
        "warmup": args.warmup, "batches": args.batches, "repeats": args.repeats,
        "trees_per_s_repeats": [round(r, 2) for r in rates], "final_loss": loss,
        "schedule_in_step": args.schedule_in_step, "sparse_embedding": args.sparse_embedding,
        "schedule_ms_mean": round(statistics.mean(schedule_ms), 3) if schedule_ms else None,
        "losses": losses, "init_weights": args.init_weights,
    })
    result.update(environment(args, ftz))
    core = (result["openblas"] or {}).get("corename", "-")
    print(f"{system} {workload.name} bs {args.batch} E {E} H {H} {args.mode}: "
          f"{row['trees_per_s']:.1f} trees/s, {row['vertices_per_s']:.0f} vertices/s "
          f"(median of {args.repeats} x {args.batches} batches, range {min(rates):.1f}..{max(rates):.1f}), "
          f"ms/batch p50 {row['ms_p50']:.2f} p90 {row['ms_p90']:.2f}, threads {row['threads']}, "
          f"openblas core {core}, allocator {result['allocator']}, ftz {row['ftz']}, loss {loss:.3f}, "
          f"load {result['loadavg'][0]:.2f}")
    if losses:
        print("losses: " + " ".join(f"{x:.6f}" for x in losses))
    write_rows(args, row, result)


if __name__ == "__main__":
    main()
