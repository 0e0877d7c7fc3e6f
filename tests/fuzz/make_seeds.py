#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid inputs of each format, from which libFuzzer mutates. Run it
again after a wire or file format changes; the files are committed."""
import os
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"


def put(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# INI configs: corner cases here; run.sh adds the shipped config/ folder as seeds.
put("config", "corners.ini", "a = 1\n[s]\nb = x y z   # comment\n[layer c1]\nlist = 1, 2 ,3\nempty =\n")

TINY_NET = """[net]
name = tiny
[input data]
shape = 1 8 8
[input label]
shape =
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 4
kernel_size = 3
weight_filler = xavier
[layer pool1]
type = Pooling
bottom = conv1
top = pool1
pool = max
kernel_size = 2
stride = 2
[layer relu1]
type = ReLU
bottom = pool1
top = pool1
[layer ip1]
type = InnerProduct
bottom = pool1
top = ip1
num_output = 10
[layer loss]
type = SoftmaxWithLoss
bottom = ip1 label
top = loss
[layer accuracy]
type = Accuracy
bottom = ip1 label
top = accuracy
phase = test
"""
put("net", "tiny.ini", TINY_NET)
put("net", "bn.ini", TINY_NET.replace("type = ReLU", "type = BatchNorm"))

# IDX: images (magic 0x803) and labels (0x801), big-endian sizes.
put("idx", "images", struct.pack(">IIII", 0x803, 2, 4, 4) + bytes(range(32)))
put("idx", "labels", struct.pack(">II", 0x801, 3) + bytes([0, 9, 4]))

# CIFAR-10: records of a label byte and 3 x 32 x 32 pixels.
put("cifar", "two-records", bytes([3]) + bytes(3072) + bytes([9]) + bytes(range(256)) * 12)

put("bracket_tree", "sst", "(3 (2 It) (4 (2 's) (3 fun)))\n(1 (1 (2 a) (1 bore)) (2 .))\n")
put("bracket_tree", "wide", "(2 (1 a) (2 b) (3 c) (4 d))\n")
put("ptb", "text", " the cat sat on the mat \n a <unk> costs N dollars \n\n")

for selector in range(4):
    put("checkpoint", f"empty-{selector}", bytes([selector]))

# Data plane: a first byte selects raw bytes (0: the handshake) or frames
# after a valid handshake (1).
hello = b"TAIHU-DP" + struct.pack("<IiII", 5, 1, 0, 3) + bytes(32)  # version 5, tls = off
put("data_plane", "hello", b"\x00" + hello)


def frame(magic, part, total, offset, payload=b""):
    chunk = struct.pack("<IiiIQQ", 0, 1, 0, 0, 7, 0)
    return struct.pack("<IIQQ", magic, part, total, offset) + chunk + payload


FRAME, REMOTE, PROBE = 0x46554854, 0x52554854, 0x50554854
put("data_plane", "one-message", b"\x01" + frame(FRAME, 8, 8, 0, struct.pack("<ff", 1.0, 2.0)))
put("data_plane", "two-parts", b"\x01" + frame(FRAME, 4, 8, 0, b"abcd") + frame(FRAME, 4, 8, 4, b"efgh"))
# After the harness's probe (which offers nothing): a second probe, a Remote frame.
put("data_plane", "probe-then-remote", b"\x01" + frame(PROBE, 0, 32, 0, struct.pack("<QII", 4096, 1, 0) + bytes(32))
    + frame(REMOTE, 0, 16, 0, struct.pack("<QII", 4096, 1, 0)))

# Control port: the gatekeeper's hello (GateMessage, 152 bytes).
put("gatekeeper", "hello", b"TAIHU-CP" + struct.pack("<IIII", 4, 0, 0, 0) + b"node1".ljust(64, b"\0")
    + bytes(32) + bytes(32))

put("status_request", "metrics", "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
put("status_request", "status", "GET /status HTTP/1.0\r\n\r\n")
put("status_request", "post", "POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
print("seeds written under", CORPUS)
