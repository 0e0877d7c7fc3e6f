"""Which malloc this process runs on, for the rows every baseline writes: a
comparison is only as fair as the peer's allocator (bench/peer_at_its_best.sh)."""

import os


def allocator_in_use():
    """'tcmalloc', 'jemalloc' or 'glibc', read from the shared objects mapped
    into this process, with glibc's or jemalloc's tuning variables if set."""
    name = "glibc"
    try:
        with open("/proc/self/maps") as maps:
            mapped = maps.read()
        if "libtcmalloc" in mapped:
            name = "tcmalloc"
        elif "libjemalloc" in mapped:
            name = "jemalloc"
    except OSError:
        pass
    tuning = {k: v for k, v in os.environ.items()
              if k in ("MALLOC_CONF", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    return name + ("-tuned" if tuning and name != "tcmalloc" else "")
