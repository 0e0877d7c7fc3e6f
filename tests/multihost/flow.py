#!/usr/bin/env python3
"""One TCP flow between two hosts of the test bed, timed: what a link carries.

  flow.py serve ADDR [PORT]                 on the receiving host: for each message of the
                                            sender, reads it whole and answers one byte
  flow.py send ADDR SIZES [REPEAT] [PORT]   on the sending host: for each size (bytes, k/M
                                            suffixes, comma-separated), REPEAT times (default 5)
                                            on one warm connection: send SIZE bytes, wait for
                                            the byte; prints one JSON line per size with the
                                            median seconds, goodput (bytes/s) and the min/max

A message's time is its bytes through the link plus one round trip (the answer): fitting
t = a + b / B over the sizes gives the flow's goodput B (payload bytes per second) and a fixed
cost a per message. Stdlib only; the sender's writes are 4 MB sendall()s, the receiver's
recv_into() of 4 MB, so Python's overhead is small next to the link at <= 10 Gbit/s.
"""
import json
import socket
import statistics
import struct
import sys
import time

PORT = 5299
CHUNK = 4 << 20


def size(text):
    mult = {"k": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * mult[text[-1]]) if text[-1] in mult else int(text)


def recv_exact(conn, view):
    got = 0
    while got < len(view):
        n = conn.recv_into(view[got:])
        if n == 0:
            raise EOFError
        got += n


def serve(addr, port):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(1)
    conn, _ = srv.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = memoryview(bytearray(CHUNK))
    head = memoryview(bytearray(8))
    try:
        while True:
            recv_exact(conn, head)
            (n,) = struct.unpack("<Q", head)
            if n == 0:
                break
            while n > 0:
                k = min(n, CHUNK)
                recv_exact(conn, buf[:k])
                n -= k
            conn.sendall(b"x")
    except EOFError:
        pass
    conn.close()


def send(addr, sizes, repeat, port):
    for _ in range(100):
        try:
            conn = socket.create_connection((addr, port))
            break
        except OSError:
            time.sleep(0.05)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    data = memoryview(bytes(CHUNK))
    one = bytearray(1)
    for n in sizes:
        times = []
        for _ in range(repeat + 1):  # the first one warms the connection (slow start)
            t0 = time.perf_counter()
            conn.sendall(struct.pack("<Q", n))
            left = n
            while left > 0:
                k = min(left, CHUNK)
                conn.sendall(data[:k])
                left -= k
            recv_exact(conn, memoryview(one))
            times.append(time.perf_counter() - t0)
        times = times[1:]
        med = statistics.median(times)
        print(json.dumps({"bytes": n, "seconds": med, "min": min(times), "max": max(times),
                          "goodput": n / med}), flush=True)
    conn.sendall(struct.pack("<Q", 0))
    conn.close()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else PORT)
    elif len(sys.argv) >= 4 and sys.argv[1] == "send":
        send(sys.argv[2], [size(s) for s in sys.argv[3].split(",")],
             int(sys.argv[4]) if len(sys.argv) > 4 else 5, int(sys.argv[5]) if len(sys.argv) > 5 else PORT)
    else:
        sys.exit(__doc__)
