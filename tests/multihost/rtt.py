#!/usr/bin/env python3
"""TCP round trip between two test-bed hosts: one byte back and forth, 200 times.

   usage: rtt.py serve ADDRESS      (answers one client, then exits)
          rtt.py ping ADDRESS       (prints the median round trip in microseconds)
"""
import socket
import statistics
import sys
import time

PORT = 29999
ROUNDS = 200


def main():
    mode, address = sys.argv[1:3]
    if mode == "serve":
        server = socket.create_server((address, PORT))
        server.settimeout(10)
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while (byte := conn.recv(1)):
            conn.sendall(byte)
        return
    conn = socket.create_connection((address, PORT), timeout=10)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        conn.sendall(b"x")
        conn.recv(1)
        times.append(time.perf_counter() - start)
    conn.close()
    print(f"{statistics.median(times) * 1e6:.0f}")


if __name__ == "__main__":
    main()
