#!/usr/bin/env python3
"""Runs a command under a cap on its resident memory and its time.

   usage: rss_cap.py MEGABYTES SECONDS COMMAND...

Ends the command (SIGKILL) once its resident set exceeds MEGABYTES (exit 137, with a line saying
so) or it runs past SECONDS (exit 124); otherwise exits with its status. A test's bound on memory
that also holds under AddressSanitizer, which reserves terabytes of address space up front, so
`ulimit -v` would stop an instrumented binary before it starts.
"""
import subprocess
import sys
import time


def resident_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main():
    limit_mb, seconds, command = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    child = subprocess.Popen(command)
    start = time.monotonic()
    while child.poll() is None:
        if resident_mb(child.pid) > limit_mb:
            child.kill()
            child.wait()
            print(f"rss_cap: {command[0]} exceeded {limit_mb:.0f} MB of resident memory", file=sys.stderr)
            sys.exit(137)
        if time.monotonic() - start > seconds:
            child.kill()
            child.wait()
            print(f"rss_cap: {command[0]} ran past {seconds:.0f} s", file=sys.stderr)
            sys.exit(124)
        time.sleep(0.02)
    sys.exit(child.returncode if child.returncode >= 0 else 128 - child.returncode)


if __name__ == "__main__":
    main()
