#!/usr/bin/env python3
"""How much CPU a host of the test bed gets right now: spins for SECONDS, prints the share of
one core it got (its CPU time / wall time).

  cpu_probe.py [SECONDS]        (default 2; run one on every host at once, e.g. with tb_exec)

All hosts share the machine's cores with each other and with whatever else runs there; summed
over the hosts, the shares are the cores the bed can get at this moment.
"""
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
start, cpu = time.monotonic(), time.process_time()
while time.monotonic() - start < seconds:
    for _ in range(10000):
        pass
print("%.4f" % ((time.process_time() - cpu) / (time.monotonic() - start)))
