#!/usr/bin/env python3
"""Looks for plaintext in a capture of the test bed's switch (capture.py's pcap).

   usage: wire_check.py PCAP [MARKER...]

Joins each TCP stream's payload in sequence order and reports, per stream:
  - every MARKER (a string a control message carries in the clear, e.g. a path from the
    config that the coordinator sends to its nodes) found in it;
  - whether it carries float32 tensors in the clear: of its 4-byte words, the share whose
    sign-and-exponent byte puts |x| in [2^-40, 2^13] (every trained weight and gradient here),
    at the best of the four alignments. Ciphertext is uniform bytes, where that share is 22%
    (28 of 128 exponent-byte values); a plaintext chunk of gradients is near 100%.
Prints a JSON summary on stdout: {"streams": N, "bytes": B, "marker_hits": {...},
"tensor_streams": [...]} with each tensor stream's endpoints, size and share.
"""
import json
import struct
import sys

TENSOR_SHARE = 0.6        # a stream above this share carries plaintext floats
MIN_TENSOR_BYTES = 65536  # streams shorter than this are handshakes and control frames


def tcp_segments(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic != 0xA1B2C3D4:
        sys.exit(f"{path}: not a pcap file this script wrote (magic {magic:#x})")
    offset = 24
    while offset + 16 <= len(data):
        _, _, caplen, _ = struct.unpack_from("<IIII", data, offset)
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue  # not IPv4
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 6:
            continue  # not TCP
        total = struct.unpack_from(">H", ip, 2)[0]
        src, dst = ip[12:16], ip[16:20]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack_from(">HHI", tcp, 0)
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            yield (".".join(map(str, src)), sport, ".".join(map(str, dst)), dport), seq, payload


def streams(path):
    segments = {}
    for key, seq, payload in tcp_segments(path):
        segments.setdefault(key, {})[seq] = payload  # a retransmission replaces its first copy
    for key, by_seq in segments.items():
        # Sequence numbers wrap at 2^32: order them from the first one seen.
        first = next(iter(by_seq))
        ordered = sorted(by_seq.items(), key=lambda item: (item[0] - first) % (1 << 32))
        yield key, b"".join(payload for _, payload in ordered)


def tensor_share(stream):
    best = 0.0
    for align in range(4):
        exponent_bytes = stream[align + 3::4]
        if not exponent_bytes:
            continue
        hits = sum(1 for b in exponent_bytes if 43 <= (b & 0x7F) <= 70)
        best = max(best, hits / len(exponent_bytes))
    return best


def main():
    path, markers = sys.argv[1], [m.encode() for m in sys.argv[2:]]
    summary = {"streams": 0, "bytes": 0, "marker_hits": {}, "tensor_streams": [], "largest_share": 0.0}
    for (src, sport, dst, dport), stream in streams(path):
        summary["streams"] += 1
        summary["bytes"] += len(stream)
        name = f"{src}:{sport} -> {dst}:{dport}"
        for marker in markers:
            if marker in stream:
                summary["marker_hits"].setdefault(marker.decode(), []).append(name)
        if len(stream) >= MIN_TENSOR_BYTES:
            share = tensor_share(stream)
            summary["largest_share"] = max(summary["largest_share"], round(share, 3))
            if share > TENSOR_SHARE:
                summary["tensor_streams"].append({"stream": name, "bytes": len(stream), "share": round(share, 3)})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
