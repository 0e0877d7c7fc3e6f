#!/usr/bin/env python3
"""Records every frame that enters the test bed's switch into a pcap file, until SIGINT or SIGTERM.

   usage: capture.py BRIDGE FILE READY_FILE   (run in the switch's network namespace)

Each frame is kept once, as it came in on a port of BRIDGE (a frame forwarded from port to port
reaches the bridge device itself only in promiscuous mode, so the ports are what to listen to).

A raw AF_PACKET socket (root), so the test bed needs no tcpdump; the file opens in Wireshark
or tcpdump -r. READY_FILE is made once the socket is bound, so a caller knows that nothing
sent after it is missed.
"""
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SNAPLEN = 262144  # veth frames are GSO super-frames of up to 64 KB and more


def main():
    interface, path, ready = sys.argv[1:4]
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # Not bound: every interface of the switch's namespace, i.e. the bridge and its ports.
    # 256 MB of socket buffer (root may exceed rmem_max): a 1 Gbit/s burst must not overflow it.
    sock.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE
    sock.settimeout(0.2)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(True))
    with open(path, "wb") as out:
        # pcap global header: magic, version 2.4, UTC, accuracy, snap length, Ethernet.
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, 1))
        open(ready, "w").close()
        frames = 0
        while not stop:
            try:
                frame, address = sock.recvfrom(SNAPLEN)
            except socket.timeout:
                continue
            except InterruptedError:
                continue
            if address[2] == socket.PACKET_OUTGOING or address[0] == interface:
                continue  # the copy leaving by another port, or one for the bridge itself
            now = time.time()
            out.write(struct.pack("<IIII", int(now), int((now % 1) * 1e6), len(frame), len(frame)))
            out.write(frame)
            frames += 1
    # PACKET_STATISTICS (level SOL_PACKET 263, option 6): frames received and dropped.
    _, dropped = struct.unpack("II", sock.getsockopt(263, 6, 8))
    print(f"capture: {frames} frames ({dropped} dropped) into {interface}'s ports -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
