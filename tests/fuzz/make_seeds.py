#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid inputs of each format, from which libFuzzer mutates. Run it
again after a wire or file format changes; the files are committed."""
import base64
import os
import pathlib
import struct
import zlib

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

# ---------------------------------------------------------------- images
# JPEGs written once by TurboJPEG's tjCompress2 (libjpeg-turbo 2.1; pixels of
# i * 37 ^ i / 7 * 11): grey 8x8, RGB 16x16 4:2:0, 24x8 4:2:2, 16x8 4:4:4
# progressive, and an 8x8 CMYK one (Adobe's inverted ink).
JPEGS = {
    "grey": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/wAALCAAIAAgBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/AGLpKnTn0bQXiTSY4wt/qJyouH4/cxnH3SMk9yo5Kq2W/9k="
    ),
    "rgb420": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjL/wAARCAAQABADASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
        "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCvKfLhMEcEKqEIx5Rw4EexcxgkjKlgA2DukKHBRSbImy0/lXMMT/PPlCShKjkq6nODtLgY"
        "JIjjYAsDlN1wY4rhZXkZWwk/lsXAZ872H8RwVYDO4l1HLxqaFuElnm5EaxokiOjBoc/K2MgMAFZI23DgrBuG4O2C6bV/n/wb99PP"
        "0QN2Wm3T5PS3z0+Wnc//2Q=="
    ),
    "rgb422": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19i"
        "Z2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
        "Y2NjY2NjY2P/wAARCAAIABgDASEAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
        "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwCJ0K2oiKbHkTJDYUBvKIxj2KOMe9TFiJn2zKEXcQ4+UA5j2k/+OsT9ad1L+u+m3XtcHb5f"
        "5fnr/wAAUEu5kAbYTwFGCBvYYPHHysw9wh9KKSoqa1/zHzzT9z8rn//Z"
    ),
    "rgb444-progressive": (
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjL/wgARCAAIABADAREAAhEBAxEB/8QAFAABAAAAAAAAAAAAAAAAAAAAA//EABUBAQEAAAAAAAAAAAAAAAAAAAEA/9oA"
        "DAMBAAIQAxAAAAE1Qv/EABcQAQADAAAAAAAAAAAAAAAAAAEAESH/2gAIAQEAAQUCcLn/xAAfEQABAwMFAAAAAAAAAAAAAAARACGR"
        "AQKxMVFSwfD/2gAIAQMBAT8BFbfYzDOUNK8epO0uV//EACERAAECBAcAAAAAAAAAAAAAAAEAIRIiQZExUnGBscHh/9oACAECAQE/"
        "ARmPt24oS5ULzYba37Iov//EAB0QAAEEAgMAAAAAAAAAAAAAAAEAEUHwAjFRYZH/2gAIAQEABj8CYAedcXaLZATbAX//xAAdEAAB"
        "BAIDAAAAAAAAAAAAAAAxAAERIUGBUXGR/9oACAEBAAE/IQbaNgbxJzDDI5ldRXDt1Owr/9oADAMBAAIAAwAAABBT/8QAGxEBAQEA"
        "AgMAAAAAAAAAAAAAAREhADFBYYH/2gAIAQMBAT8Q0j8um10gGuKmgQAgkU6d2APMCxegIHP/xAAYEQEBAQEBAAAAAAAAAAAAAAAB"
        "ESExUf/aAAgBAgEBPxCOitmYLMNGAGLIQRB78KgZuhjA3GHAgP/EABcQAQEBAQAAAAAAAAAAAAAAAAERIUH/2gAIAQEAAT8QdChk"
        "uE1BUqAQ0cWSuu9q0aqsaJFQAhv/2Q=="
    ),
    "cmyk": (
        "/9j/7gAOQWRvYmUAZAAAAAAC/9sAQwAIBgYHBgUIBwcHCQkICgwUDQwLCwwZEhMPFB0aHx4dGhwcICQuJyAiLCMcHCg3KSwwMTQ0"
        "NB8nOT04MjwuMzQy/9sAQwEJCQkMCwwYDQ0YMiEcITIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIy/8AAFAgACAAIBAERAAIRAQMRAQQRAP/EAB8AAAEFAQEBAQEBAAAAAAAAAAABAgMEBQYHCAkKC//EALUQAAIBAwMCBAMF"
        "BQQEAAABfQECAwAEEQUSITFBBhNRYQcicRQygZGhCCNCscEVUtHwJDNicoIJChYXGBkaJSYnKCkqNDU2Nzg5OkNERUZHSElKU1RV"
        "VldYWVpjZGVmZ2hpanN0dXZ3eHl6g4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2drh"
        "4uPk5ebn6Onq8fLz9PX29/j5+v/EAB8BAAMBAQEBAQEBAQEAAAAAAAABAgMEBQYHCAkKC//EALURAAIBAgQEAwQHBQQEAAECdwAB"
        "AgMRBAUhMQYSQVEHYXETIjKBCBRCkaGxwQkjM1LwFWJy0QoWJDThJfEXGBkaJicoKSo1Njc4OTpDREVGR0hJSlNUVVZXWFlaY2Rl"
        "ZmdoaWpzdHV2d3h5eoKDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uLj5OXm5+jp"
        "6vLz9PX29/j5+v/aAA4EAQACEQMRBAAAPwAaA3JW7t9QaKSVgQgcswJGe/O5FJfGT878knaZK5XTtTtzwWj0VndpXdtLOWsmrOyi"
        "k0nFp+25pSWIVnC+tmrbp36xaVouXwq7aXNzIY1uttb21xYER/aYZozBvBjGVkeQF2Th41dQ2VLZ3YBYOr//2Q=="
    ),
}
for name, text in JPEGS.items():
    put("jpeg", name + ".jpg", base64.b64decode("".join(text)))


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png(width, height, depth, colour, samples, extra=b"", interlaced=False):
    """A PNG from `samples` (rows of per-pixel tuples); sub-byte depths packed."""
    per_pixel = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]

    def row_bytes(pixels):
        if depth >= 8:
            return b"".join(struct.pack(">" + ("B" if depth == 8 else "H") * per_pixel, *p) for p in pixels)
        bits = "".join(format(p[0], "0%db" % depth) for p in pixels)
        bits += "0" * (-len(bits) % 8)
        return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))

    raw = b""
    if interlaced:
        for x0, y0, dx, dy in ADAM7:
            for y in range(y0, height, dy):
                pixels = [samples[y][x] for x in range(x0, width, dx)]
                if pixels:
                    raw += b"\0" + row_bytes(pixels)
    else:
        for y in range(height):
            raw += b"\0" + row_bytes(samples[y])
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 1 if interlaced else 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw, 9))
            + png_chunk(b"IEND", b""))


def grid(width, height, channels, scale=1):
    return [[tuple((x * 40 + y * 25 + c * 70) * scale % (256 * scale) for c in range(channels))
             for x in range(width)] for y in range(height)]


put("png", "grey8", png(4, 4, 8, 0, grid(4, 4, 1)))
put("png", "rgb8", png(5, 3, 8, 2, grid(5, 3, 3)))
put("png", "grey1", png(9, 2, 1, 0, [[(x % 2,) for x in range(9)] for _ in range(2)]))
put("png", "palette2-trns", png(6, 2, 2, 3, [[(x % 4,) for x in range(6)] for _ in range(2)],
                                png_chunk(b"PLTE", bytes(range(12))) + png_chunk(b"tRNS", b"\x00\x80")))
put("png", "grey-alpha8", png(3, 3, 8, 4, grid(3, 3, 2)))
put("png", "rgba16-interlaced", png(9, 9, 16, 6, grid(9, 9, 4, 257), png_chunk(b"gAMA", struct.pack(">I", 45455)),
                                    interlaced=True))
put("png", "rgb8-interlaced", png(3, 5, 8, 2, grid(3, 5, 3), interlaced=True))

# ---------------------------------------------------------------- protobuf
# Just enough of the protobuf wire format for the seeds of the Caffe formats.


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        out += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
        n >>= 7
        if not n:
            return out


def field(number, value):
    """An int (varint), bytes/str/list of fields (length-delimited) field."""
    if isinstance(value, bool) or isinstance(value, int):
        return varint(number << 3) + varint(int(value))
    if isinstance(value, str):
        value = value.encode()
    return varint(number << 3 | 2) + varint(len(value)) + value


def floats(values):
    return struct.pack("<%df" % len(values), *values)


def datum(label, channels=0, height=0, width=0, data=b"", encoded=False):
    out = b""
    if channels:
        out += field(1, channels) + field(2, height) + field(3, width)
    out += field(4, data) + field(5, label)
    if encoded:
        out += field(7, True)
    return out


# A raw record stores channel-major B, G, R.
RAW_DATUM = datum(3, 3, 2, 2, bytes(range(12)))
PNG_DATUM = datum(1, data=png(2, 2, 8, 0, grid(2, 2, 1)), encoded=True)
JPEG_DATUM = datum(7, data=base64.b64decode("".join(JPEGS["grey"])), encoded=True)

# ---------------------------------------------------------------- LMDB
# A data.mdb as LMDB 0.9 writes it on a 64-bit little-endian machine with
# 4 KB pages: two meta pages (the first of the empty database of the file's
# creation, the second of the transaction that wrote the records) and one
# leaf page of records, keys in order.
PAGE = 4096
P_INVALID = (1 << 64) - 1


def lmdb_db(depth=0, leaf_pages=0, entries=0, root=P_INVALID, pad=0, flags=0):
    return struct.pack("<IHHQQQQQ", pad, flags, depth, 0, leaf_pages, 0, entries, root)


def lmdb_meta(pgno, txnid, main, last_page):
    meta = struct.pack("<IIQQ", 0xBEEFC0DE, 1, 0, 1 << 20) + lmdb_db(pad=PAGE) + main
    meta += struct.pack("<QQ", last_page, txnid)
    return (struct.pack("<QHHHH", pgno, 0, 0x08, 0, 0) + meta).ljust(PAGE, b"\0")


def lmdb_file(records):
    records = sorted(records)
    upper, nodes, pointers = PAGE, b"", b""
    for key, value in records:
        node = struct.pack("<HHHH", len(value) & 0xffff, len(value) >> 16, 0, len(key)) + key + value
        node += b"\0" * (len(node) % 2)
        upper -= len(node)
        nodes = node + nodes
        pointers += struct.pack("<H", upper)
    lower = 16 + len(pointers)
    assert lower <= upper
    leaf = struct.pack("<QHHHH", 2, 0, 0x02, lower, upper) + pointers
    leaf = leaf.ljust(upper, b"\0") + nodes
    main = lmdb_db(depth=1, leaf_pages=1, entries=len(records), root=2)
    return lmdb_meta(0, 0, lmdb_db(), 1) + lmdb_meta(1, 1, main, 2) + leaf


put("lmdb", "images.mdb", lmdb_file([(b"00000000_a.jpg", JPEG_DATUM), (b"00000001_b.png", PNG_DATUM),
                                     (b"00000002_c", RAW_DATUM)]))
put("lmdb", "one.mdb", lmdb_file([(b"k", RAW_DATUM)]))
put("lmdb", "raw-datum", RAW_DATUM)
put("lmdb", "png-datum", PNG_DATUM)
# A mean file (BlobProto: shape 7, data 5), which the target reads too.
put("lmdb", "mean.binaryproto", field(7, field(1, b"".join(varint(d) for d in (1, 3, 2, 2))))
    + field(5, floats([float(i) for i in range(12)])))

# ---------------------------------------------------------------- Caffe
# Net descriptions (prototxt), each fed as the text; a "# input-shape:" line
# gives the target an --input-shape (protobuf's text format skips it as a comment).
PROTOTXT_SMALL = """name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 4 dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        param { lr_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
        convolution_param { num_output: 2 kernel_size: 3 pad: 1 weight_filler { type: "gaussian" std: 0.01 } } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { eps: 0.001 } }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 3 } }
"""
put("prototxt", "small.prototxt", PROTOTXT_SMALL)
put("prototxt", "lenet-data.prototxt", """# input-shape: data=1,8,8
name: "LeNet"
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
        transform_param { scale: 0.00390625 } data_param { source: "train_lmdb" batch_size: 64 backend: LMDB } }
layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TEST }
        transform_param { scale: 0.00390625 } data_param { source: "test_lmdb" batch_size: 100 backend: LMDB } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_h: 3 kernel_w: 2 stride: 1 weight_filler { type: "xavier" } } }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "drop" type: "Dropout" bottom: "pool1" top: "pool1" dropout_param { dropout_ratio: 0.5 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool1" top: "ip1" inner_product_param { num_output: 10 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" loss_param { normalize: false } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy" include { phase: TEST } }
""")
put("prototxt", "legacy-inputs.prototxt", """input: "data"
input_dim: 1 input_dim: 2 input_dim: 5 input_dim: 5
input: "other" input_dim: 1 input_dim: 2 input_dim: 5 input_dim: 5
force_backward: true
layer { name: "a" type: "LRN" bottom: "data" top: "a" lrn_param { local_size: 3 alpha: 0.0001 beta: 0.75 } }
layer { name: "split" type: "Split" bottom: "other" top: "o1" top: "o2" }
layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "o1" top: "sum" eltwise_param { operation: SUM coeff: 1 coeff: -1 } }
layer { name: "cat" type: "Concat" bottom: "sum" bottom: "o2" top: "cat" concat_param { axis: 1 } }
layer { name: "sig" type: "Sigmoid" bottom: "cat" top: "cat" }
layer { name: "flat" type: "Flatten" bottom: "cat" top: "flat" }
layer { name: "shape" type: "Reshape" bottom: "flat" top: "shape" reshape_param { shape { dim: 0 dim: -1 dim: 4 } } }
layer { name: "prob" type: "Softmax" bottom: "shape" top: "prob" softmax_param { axis: 2 } exclude { phase: TRAIN } }
""")
put("prototxt", "image-data.prototxt", """layer { name: "images" type: "ImageData" top: "data" top: "label"
        image_data_param { source: "list.txt" new_height: 8 new_width: 8 is_color: false }
        transform_param { crop_size: 6 } }
layer { name: "dummy" type: "DummyData" top: "extra" dummy_data_param { shape { dim: 1 dim: 1 dim: 6 dim: 6 } } }
layer { name: "tanh" type: "TanH" bottom: "data" top: "t" }
layer { name: "pool" type: "Pooling" bottom: "t" top: "pool" pooling_param { pool: AVE global_pooling: true } }
""")


def blob(dims, values=None, legacy=False):
    count = 1
    for d in dims:
        count *= d
    values = values if values is not None else [((i * 7) % 11 - 5) / 10 for i in range(count)]
    if legacy:
        dims = [1] * (4 - len(dims)) + list(dims)
        head = b"".join(field(n + 1, d) for n, d in enumerate(dims))
    else:
        head = field(7, field(1, b"".join(varint(d) for d in dims)))
    return head + field(5, floats(values))


# Weights of PROTOTXT_SMALL's net (the caffemodel target's fixed net): the
# current form, the V1 form (4-D legacy shapes) and V0 layers nested in V1.
def weights_layer(name, kind, blobs):
    return field(100, field(1, name) + field(2, kind) + b"".join(field(7, b) for b in blobs))


def v1_layer(name, kind, blobs):
    return field(2, field(4, name) + field(5, kind) + b"".join(field(6, b) for b in blobs))


def v0_layer(name, kind, blobs):
    return field(2, field(1, field(1, name) + field(2, kind) + b"".join(field(50, b) for b in blobs)))


CONV = [blob([2, 3, 3, 3]), blob([2])]
BN = [blob([2], [0.2, 0.4]), blob([2], [2.0, 4.0]), blob([1], [2.0])]
SCALE = [blob([2], [1.0, 0.5]), blob([2], [0.0, 0.1])]
IP = [blob([3, 32]), blob([3])]
put("caffemodel", "current", field(1, "small") + weights_layer("conv1", "Convolution", CONV)
    + weights_layer("bn1", "BatchNorm", BN) + weights_layer("scale1", "Scale", SCALE)
    + weights_layer("ip", "InnerProduct", IP) + weights_layer("data", "Input", []))
put("caffemodel", "v1-legacy-shapes", field(1, "small") + v1_layer("conv1", 4, [blob([2, 3, 3, 3], legacy=True), blob([2], legacy=True)])
    + weights_layer("bn1", "BatchNorm", BN) + weights_layer("scale1", "Scale", SCALE)
    + v1_layer("ip", 14, [blob([3, 32], legacy=True), blob([3], legacy=True)]))
put("caffemodel", "v0-partial", v0_layer("conv1", "conv", CONV) + v0_layer("unused", "conv", [blob([1])]))

# ---------------------------------------------------------------- launchers
# KEY=VALUE lines, as each launcher leaves them.
put("launch_env", "torchrun", "RANK=1\nWORLD_SIZE=4\nLOCAL_RANK=1\nLOCAL_WORLD_SIZE=2\nMASTER_ADDR=10.0.0.1\n"
    "MASTER_PORT=29500\nTORCHELASTIC_RUN_ID=job7\n")
put("launch_env", "openmpi", "OMPI_COMM_WORLD_RANK=2\nOMPI_COMM_WORLD_SIZE=4\nOMPI_COMM_WORLD_LOCAL_RANK=0\n"
    "OMPI_COMM_WORLD_LOCAL_SIZE=2\nOMPI_MCA_ess_base_jobid=1234\nSLURM_PROCID=0\n")
put("launch_env", "slurm", "SLURM_PROCID=3\nSLURM_STEP_NUM_TASKS=6\nSLURM_NTASKS=6\nSLURM_LOCALID=1\n"
    "SLURM_STEP_ID=0\nSLURM_JOB_ID=991\nSLURM_NODEID=1\nSLURM_STEP_TASKS_PER_NODE=2(x2),1,1\n"
    "SLURM_STEP_NODELIST=node[01-02,07],rack[1-2]-n[1-2],login2\n")
put("launch_env", "slurm-batch", "SLURM_PROCID=0\nSLURM_NTASKS=2\nSLURM_JOB_ID=5\nSLURM_JOB_NODELIST=a[1-2]\n"
    "SLURM_TASKS_PER_NODE=1(x2)\n")
put("launch_env", "pmi", "PMI_RANK=1\nPMI_SIZE=2\nMPI_LOCALRANKID=0\nMPI_LOCALNRANKS=1\n")
put("launch_env", "pmix-alone", "PMIX_RANK=0\nPMIX_NAMESPACE=x\n")
print("seeds written under", CORPUS)
