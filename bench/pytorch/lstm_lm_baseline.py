#!/usr/bin/python3
"""PyTorch CPU baseline for taihu's Cavs LSTM language-model benchmark.

embedding (V x E) -> one fused nn.LSTM (or nn.GRU with --cell gru) layer of
hidden H -> linear H x V -> cross-entropy (mean over predicted tokens) -> plain
SGD. Defaults: H = E = 512, V = 10,000 outputs, batch 64 (cavs.md §2.3, §8).

Data: PTB (Mikolov) sentences, each followed by <eos>, from
  --ptb DIR      ../shared/data/ptb, --split valid|test (the train split is not
                 in the project data); ids by frequency over valid + test, so
                 they match build/bench/make_tree_workload's ptb-* files
  --workload F   a chain workload (make_tree_workload ptb-valid/ptb-test):
                 per sentence, tokens <eos> w1..wn and labels w1..wn <eos>
Two ways to cut it (--lengths):
  fixed     the token stream (w1..wn <eos> of every sentence in order) cut
            into 64 columns and chunks of --bptt steps (20 or 35); the hidden
            state is carried across chunks and detached (truncated BPTT)
  variable  64 consecutive sentences per batch, each its own sequence
            (input <eos> w1..wn, target w1..wn <eos>), zero initial state,
            padded then packed (pack_padded_sequence, enforce_sorted=False),
            so no computation is spent on padding

Throughput is predicted tokens per second of training (forward, loss,
backward, SGD update), median over --repeats of --steps timed steps after
--warmup steps; the same batches are timed in every repeat. CSV rows share the
Tree-LSTM columns: a chain's vertices are its tokens, so vertices_per_s is
tokens/s and trees_per_s is sequences/s (fixed: columns x chunks).

Tuning as treelstm_baseline.py (OPENBLAS_NUM_THREADS=1 before torch loads,
torch.set_num_threads(--threads), flush-to-zero; SkylakeX only with AVX-512),
off with --untuned.

  /usr/bin/python3 bench/pytorch/lstm_lm_baseline.py --lengths fixed --bptt 35 --threads 2
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import treelstm_baseline as common  # noqa: E402  (sets the OpenBLAS environment first)

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

from tree_workload import read_workload  # noqa: E402

EOS = "<eos>"
UNK = "<unk>"


def default_ptb_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.environ.get("TAIHU_DATA_DIR", ""), os.path.join(here, "../../../shared/data"),
                      os.path.join(here, "../../../../shared/data"), "/work/shared/data"):
        if candidate and os.path.exists(os.path.join(candidate, "ptb", "valid.txt")):
            return os.path.join(candidate, "ptb")
    return os.path.join(here, "../../../shared/data/ptb")


def read_ptb(directory, split, min_vocabulary):
    """Sentences as id lists ending with <eos>; ids ordered like taihu's
    VocabularyBuilder: <unk> = 0, then by descending count, ties by bytes."""
    counts = collections.Counter()
    texts = {}
    for name in ("valid", "test"):
        path = os.path.join(directory, name + ".txt")
        if not os.path.exists(path):
            if name == split:
                sys.exit(f"{path} not found (pass --ptb DIR or set TAIHU_DATA_DIR)")
            continue
        with open(path, encoding="utf-8") as f:
            # Only ASCII blanks separate tokens (never other Unicode whitespace).
            lines = [line.replace("\t", " ").replace("\r", " ").split(" ") for line in f.read().split("\n")]
        sentences = [[w for w in line if w] + [EOS] for line in lines if any(line)]
        texts[name] = sentences
        for s in sentences:
            counts.update(s)
    order = sorted((t for t in counts if t != UNK), key=lambda t: (-counts[t], t.encode()))
    ids = {UNK: 0}
    for t in order:
        ids[t] = len(ids)
    sentences = [[ids[t] for t in s] for s in texts[split]]
    return sentences, max(len(ids), min_vocabulary), ids[EOS]


def sentences_from_workload(path):
    w = read_workload(path)
    # labels = w1..wn <eos>: the sentence as the stream stores it
    return [t.labels.tolist() for t in w.trees], w.vocabulary_size, int(w.trees[0].tokens[0]), w.name


class LanguageModel(nn.Module):
    def __init__(self, vocab, embed, hidden, cell):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(embed, hidden)
        self.output = nn.Linear(hidden, vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -0.05, 0.05)


def fixed_batches(sentences, batch, bptt):
    stream = torch.tensor([t for s in sentences for t in s], dtype=torch.int64)
    columns = len(stream) // batch
    data = stream[:columns * batch].view(batch, columns).t().contiguous()  # time x batch
    chunks = []
    for i in range(0, columns - 1, bptt):
        n = min(bptt, columns - 1 - i)
        chunks.append((data[i:i + n], data[i + 1:i + 1 + n], None))
    return chunks


def variable_batches(sentences, batch, eos):
    out = []
    for b in range(0, len(sentences) - batch + 1, batch):
        group = sentences[b:b + batch]
        lengths = torch.tensor([len(s) for s in group])
        T = int(lengths.max())
        inputs = torch.zeros(T, batch, dtype=torch.int64)
        targets = torch.zeros(T, batch, dtype=torch.int64)
        for j, s in enumerate(group):
            inputs[:len(s), j] = torch.tensor([eos] + s[:-1])
            targets[:len(s), j] = torch.tensor(s)
        packed_targets = pack_padded_sequence(targets, lengths, enforce_sorted=False).data
        out.append((inputs, packed_targets, lengths))
    return out


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--ptb", default=None, help="PTB directory (default ../shared/data/ptb)")
    p.add_argument("--split", choices=("valid", "test"), default="valid")
    p.add_argument("--workload", help="chain workload file instead of --ptb")
    p.add_argument("--lengths", choices=("fixed", "variable"), default="fixed")
    p.add_argument("--bptt", type=int, default=35, help="chunk length for --lengths fixed")
    p.add_argument("--cell", choices=("lstm", "gru"), default="lstm")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--embed", type=int, default=512)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--vocabulary", type=int, default=10000, help="minimum output size (PTB: 10,000)")
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=10, help="timed steps per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--untuned", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--system", help="system name in the rows (default pytorch-nn.LSTM / pytorch-nn.GRU)")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--csv", metavar="FILE")
    return p.parse_args()


def main():
    args = parse_args()
    ftz = False
    if not args.untuned:
        ftz = torch.set_flush_denormal(True)
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    if args.workload:
        sentences, vocab, eos, source = sentences_from_workload(args.workload)
        vocab = max(vocab, args.vocabulary)
    else:
        sentences, vocab, eos = read_ptb(args.ptb or default_ptb_dir(), args.split, args.vocabulary)
        source = "ptb-" + args.split
    if args.lengths == "fixed":
        batches = fixed_batches(sentences, args.batch, args.bptt)
        workload = f"{source}-fixed{args.bptt}"
    else:
        batches = variable_batches(sentences, args.batch, eos)
        workload = f"{source}-variable"
    needed = args.warmup + args.steps
    if len(batches) < needed:
        sys.exit(f"{workload}: {len(batches)} batches, need {needed}")

    model = LanguageModel(vocab, args.embed, args.hidden, args.cell)
    model.train()
    params = list(model.parameters())

    def step(batch, hidden):
        inputs, targets, lengths = batch
        x = model.embedding(inputs)
        if lengths is None:
            y, hidden = model.rnn(x, hidden)
            y = y.reshape(-1, y.shape[-1])
            targets = targets.reshape(-1)
        else:
            y = model.rnn(pack_padded_sequence(x, lengths, enforce_sorted=False))[0].data
            hidden = None
        loss = F.cross_entropy(model.output(y), targets)
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-args.lr)
        if hidden is not None:  # truncated BPTT: keep the state, drop its history
            hidden = tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) else hidden.detach()
        return loss.item(), hidden

    def tokens_of(batch):
        return batch[1].numel()

    def sequences_of(batch):
        return batch[1].shape[1] if batch[2] is None else len(batch[2])

    hidden = None
    for b in batches[:args.warmup]:
        loss, hidden = step(b, hidden)
    timed = batches[args.warmup:needed]
    rates, seq_rates, times = [], [], []
    for _ in range(args.repeats):
        hidden = None
        elapsed = 0.0
        for b in timed:
            start = time.perf_counter()
            loss, hidden = step(b, hidden)
            dt = time.perf_counter() - start
            elapsed += dt
            times.append(dt * 1e3)
        rates.append(sum(tokens_of(b) for b in timed) / elapsed)
        seq_rates.append(sum(sequences_of(b) for b in timed) / elapsed)

    system = args.system or ("pytorch-nn." + args.cell.upper()) + ("-untuned" if args.untuned else "")
    row = {
        "system": system, "workload": workload, "bs": args.batch, "E": args.embed, "H": args.hidden,
        "threads": torch.get_num_threads(), "mode": "train",
        "trees_per_s": round(statistics.median(seq_rates), 2),
        "vertices_per_s": round(statistics.median(rates), 1),
        "ms_p50": round(float(np.percentile(times, 50)), 3), "ms_p90": round(float(np.percentile(times, 90)), 3),
        "rounds": round(statistics.mean(int(b[0].shape[0]) for b in timed), 2),
        "gemm_calls": "",
        "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "ftz": int(bool(ftz)),
    }
    result = dict(row)
    result.update({
        "tokens_per_s": row["vertices_per_s"], "tokens_per_s_repeats": [round(r, 1) for r in rates],
        "cell": args.cell, "lengths": args.lengths, "bptt": args.bptt if args.lengths == "fixed" else None,
        "vocabulary": vocab, "lr": args.lr, "warmup": args.warmup, "steps": args.steps, "repeats": args.repeats,
        "mean_tokens_per_step": statistics.mean(tokens_of(b) for b in timed), "final_loss": loss,
    })
    result.update(common.environment(args, ftz))
    core = (result["openblas"] or {}).get("corename", "-")
    print(f"{system} {workload} bs {args.batch} E {args.embed} H {args.hidden} V {vocab}: "
          f"{row['vertices_per_s']:.0f} tokens/s (median of {args.repeats} x {args.steps} steps, "
          f"range {min(rates):.0f}..{max(rates):.0f}), ms/step p50 {row['ms_p50']:.1f} p90 {row['ms_p90']:.1f}, "
          f"{result['mean_tokens_per_step']:.0f} tokens/step, threads {row['threads']}, openblas core {core}, "
          f"allocator {result['allocator']}, ftz {row['ftz']}, loss {loss:.3f}, load {result['loadavg'][0]:.2f}")
    common.write_rows(args, row, result)


if __name__ == "__main__":
    main()
