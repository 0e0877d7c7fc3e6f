#!/usr/bin/env python3
"""Analytic shape and parameter calculator for taihu net files (config/nets/*.ini).

Reads a net description in taihu's INI format, propagates blob shapes with
Caffe's rules (convolution floors, pooling ceils), and counts learnable
parameters (BatchNorm's running statistics are state, not learnable; Scale's
gamma and beta are learnable). It is independent of the C++ layers, so it can
check a net file before they exist, and it rejects option keys that the layer
types do not take.

    scripts/net_params.py config/nets/alexnet.ini            # totals
    scripts/net_params.py -v config/nets/resnet50.ini        # per-layer table
"""

import argparse
import math
import re
import sys

COMMON_KEYS = {"type", "bottom", "top", "phase", "loss_weight"}
MULT_RE = re.compile(r"^[a-z_]+_(lr|decay)_mult$")

KEYS = {
    "Convolution": {"num_output", "kernel_size", "kernel_h", "kernel_w", "stride", "stride_h", "stride_w",
                    "pad", "pad_h", "pad_w", "dilation", "group", "bias_term", "weight_filler", "bias_filler"},
    "Pooling": {"pool", "kernel_size", "kernel_h", "kernel_w", "stride", "stride_h", "stride_w", "pad",
                "pad_h", "pad_w", "global_pooling"},
    "InnerProduct": {"num_output", "bias_term", "axis", "weight_filler", "bias_filler"},
    "ReLU": {"negative_slope"},
    "Sigmoid": set(),
    "TanH": set(),
    "Dropout": {"dropout_ratio"},
    "BatchNorm": {"eps", "momentum", "use_global_stats"},
    "Scale": {"bias_term", "axis", "num_axes", "weight_filler", "bias_filler"},
    "LRN": {"local_size", "alpha", "beta", "k", "norm_region"},
    "Softmax": {"axis"},
    "SoftmaxWithLoss": {"axis", "ignore_label", "normalize"},
    "Accuracy": {"top_k", "axis", "ignore_label"},
    "Eltwise": {"operation", "coeff"},
    "Concat": {"axis"},
    "Flatten": {"axis", "end_axis"},
    "Reshape": {"shape"},
    "Split": set(),
}
IN_PLACE_OK = {"ReLU", "Sigmoid", "TanH", "Dropout"}


class NetError(Exception):
    pass


def parse_ini(path):
    """Returns [(kind, name, {key: value}, line)] in file order."""
    sections = [("", "", {}, 0)]
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw
            for i, c in enumerate(line):
                if c in "#;" and (i == 0 or line[i - 1] in " \t"):
                    line = line[:i]
                    break
            line = line.strip()
            if not line:
                continue
            if line.startswith("["):
                if not line.endswith("]"):
                    raise NetError(f"{path}:{number}: unterminated section header")
                parts = line[1:-1].split()
                kind, name = parts[0], (parts[1] if len(parts) > 1 else "")
                for k, n, _, where in sections:
                    if k == kind and n == name:
                        raise NetError(f"{path}:{number}: [{kind} {name}] already defined at line {where}")
                sections.append((kind, name, {}, number))
            else:
                if "=" not in line:
                    raise NetError(f"{path}:{number}: expected key = value")
                key, value = (s.strip() for s in line.split("=", 1))
                if key in sections[-1][2]:
                    raise NetError(f"{path}:{number}: key '{key}' set twice")
                sections[-1][2][key] = value
    return sections


def ints(text):
    return [int(v) for v in text.replace(",", " ").split()]


def spatial(opts, base, default, what):
    """Reads a 2-D option given as `base` or `base_h`/`base_w` (Caffe style)."""
    if base + "_h" in opts or base + "_w" in opts:
        return int(opts[base + "_h"]), int(opts[base + "_w"])
    if base in opts:
        v = ints(opts[base])
        return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])
    if default is None:
        raise NetError(f"missing {what}")
    return default, default


def conv_out(size, kernel, pad, stride, dilation):
    extent = dilation * (kernel - 1) + 1
    return (size + 2 * pad - extent) // stride + 1


def pool_out(size, kernel, pad, stride):
    out = math.ceil((size + 2 * pad - kernel) / stride) + 1
    if pad > 0 and (out - 1) * stride >= size + pad:  # last window must start inside the image
        out -= 1
    return out


def analyse(path, verbose=False, batch=1):
    sections = parse_ini(path)
    shapes = {}  # blob -> per-sample shape (tuple, batch excluded)
    readers = {}
    rows = []
    total_params = 0
    total_macs = 0
    net_name = ""
    for kind, name, opts, line in sections:
        where = f"{path}:{line} [{kind} {name}]"
        if kind == "net":
            net_name = opts.get("name", "")
        elif kind == "input":
            shapes[name] = tuple(ints(opts.get("shape", "")))
        elif kind == "layer":
            try:
                p, macs, out = layer(opts, shapes)
            except (NetError, KeyError, ValueError, IndexError) as e:
                raise NetError(f"{where}: {e}") from None
            for t, s in zip(opts.get("top", "").split(), out):
                shapes[t] = s
            for b in opts.get("bottom", "").split():
                readers[b] = readers.get(b, 0) + 1
            total_params += p
            total_macs += macs
            rows.append((name, opts["type"], out[0] if out else (), p, macs))
    if verbose:
        print(f"{'layer':32} {'type':16} {'top shape':18} {'params':>12} {'MMACs':>10}")
        for name, typ, shape, p, macs in rows:
            print(f"{name:32} {typ:16} {'x'.join(map(str, shape)) or 'scalar':18} {p:12,} {macs / 1e6:10.1f}")
    return {"name": net_name, "params": total_params, "macs": total_macs, "layers": len(rows)}


def layer(opts, shapes):
    """Returns (learnable parameter count, forward multiply-adds per sample, [top shapes])."""
    typ = opts["type"]
    if typ not in KEYS:
        raise NetError(f"unknown layer type '{typ}'")
    for key in opts:
        if key not in COMMON_KEYS and key not in KEYS[typ] and not MULT_RE.match(key):
            raise NetError(f"unknown option '{key}' for {typ}")
    bottoms = opts.get("bottom", "").split()
    tops = opts.get("top", "").split()
    for b in bottoms:
        if b not in shapes:
            raise NetError(f"bottom '{b}' is produced by no earlier layer")
    if tops and bottoms and tops[0] == bottoms[0] and typ not in IN_PLACE_OK:
        raise NetError(f"{typ} cannot work in place")
    if opts.get("phase", "both") not in ("train", "test", "both"):
        raise NetError("phase must be train or test")
    x = shapes[bottoms[0]] if bottoms else ()
    bias = opts.get("bias_term", "true") in ("true", "yes", "on", "1")

    if typ == "Convolution":
        c, h, w = x
        n = int(opts["num_output"])
        g = int(opts.get("group", 1))
        kh, kw = spatial(opts, "kernel_size", None, "kernel_size")
        sh, sw = spatial(opts, "stride", 1, "stride")
        ph, pw = spatial(opts, "pad", 0, "pad")
        d = int(opts.get("dilation", 1))
        if c % g or n % g:
            raise NetError(f"group {g} does not divide channels {c} -> {n}")
        oh, ow = conv_out(h, kh, ph, sh, d), conv_out(w, kw, pw, sw, d)
        if oh <= 0 or ow <= 0:
            raise NetError(f"output {oh}x{ow} is empty")
        weights = n * (c // g) * kh * kw
        return weights + (n if bias else 0), weights * oh * ow, [(n, oh, ow)]
    if typ == "Pooling":
        c, h, w = x
        if opts.get("global_pooling", "false") == "true":
            return 0, 0, [(c, 1, 1)]
        if opts.get("pool", "max") not in ("max", "ave"):
            raise NetError("pool must be max or ave")
        kh, kw = spatial(opts, "kernel_size", None, "kernel_size")
        sh, sw = spatial(opts, "stride", 1, "stride")
        ph, pw = spatial(opts, "pad", 0, "pad")
        return 0, 0, [(c, pool_out(h, kh, ph, sh), pool_out(w, kw, pw, sw))]
    if typ == "InnerProduct":
        axis = int(opts.get("axis", 1)) - 1  # per-sample shapes exclude the batch axis
        k = math.prod(x[axis:])
        n = int(opts["num_output"])
        return k * n + (n if bias else 0), k * n, [x[:axis] + (n,)]
    if typ in ("ReLU", "Sigmoid", "TanH", "Dropout", "LRN", "Softmax"):
        if typ == "LRN" and opts.get("norm_region", "across_channels") not in ("across_channels",
                                                                               "within_channel"):
            raise NetError("bad norm_region")
        return 0, 0, [x]
    if typ == "BatchNorm":
        return 0, 0, [x]  # running mean and variance are state
    if typ == "Scale":
        c = x[0]
        return c * (2 if opts.get("bias_term", "false") == "true" else 1), 0, [x]
    if typ == "Eltwise":
        for b in bottoms:
            if shapes[b] != x:
                raise NetError(f"Eltwise shapes differ: {shapes[b]} vs {x}")
        return 0, 0, [x]
    if typ == "Concat":
        axis = int(opts.get("axis", 1)) - 1
        rest = [shapes[b] for b in bottoms]
        for s in rest:
            if s[:axis] + s[axis + 1:] != x[:axis] + x[axis + 1:]:
                raise NetError(f"Concat shapes differ off axis: {s} vs {x}")
        return 0, 0, [x[:axis] + (sum(s[axis] for s in rest),) + x[axis + 1:]]
    if typ == "Flatten":
        return 0, 0, [(math.prod(x),)]
    if typ in ("SoftmaxWithLoss", "Accuracy"):
        if len(bottoms) != 2:
            raise NetError(f"{typ} takes scores and label")
        if typ == "Accuracy" and int(opts.get("top_k", 1)) > x[0]:
            raise NetError("top_k exceeds the number of classes")
        return 0, 0, [()]
    raise NetError(f"calculator does not model {typ}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("-v", "--verbose", action="store_true", help="print a per-layer table")
    args = parser.parse_args()
    status = 0
    for path in args.files:
        try:
            r = analyse(path, args.verbose)
        except NetError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 1
            continue
        print(f"{path}: {r['name']}: {r['layers']} layers, {r['params']:,} learnable parameters, "
              f"{r['macs'] / 1e9:.3f} GMACs forward per sample")
    return status


if __name__ == "__main__":
    sys.exit(main())
