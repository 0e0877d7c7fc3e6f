#!/usr/bin/env python3
"""Soak: an elastic cluster (coordinator + 3 taihu-node) trains LeNet on loopback while nodes are
killed, stopped and restarted at random and every listening port gets garbage. Then checks that
the coordinator neither crashed nor hung, that its resident memory stayed bounded, that every
checkpoint it wrote loads, and that the final accuracy is within 1 point of an undisturbed run.

  tests/soak/soak.sh MINUTES [BUILD_DIR]       (see there; this script does the work)
"""
import argparse
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

NODES = 3


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def listening_ports(pid):
    """The TCP ports a process listens on: its socket inodes matched against /proc/net/tcp{,6}."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return []
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                        ports.add(int(cols[1].split(":")[1], 16))
        except OSError:
            pass
    return sorted(ports)


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def checkpoint_iteration(path):
    """Checks a checkpoint's framing (magic, size, checksum) and returns its iteration."""
    data = open(path, "rb").read()
    if data[:8] not in (b"TAIHUCK1", b"TAIHUCK2"):  # formats 1 and 2 begin alike
        raise ValueError("bad magic")
    (size,) = struct.unpack_from("<Q", data, 8)
    payload = data[16 : 16 + size]
    if len(data) != 24 + size or fnv1a(payload) != struct.unpack_from("<Q", data, 16 + size)[0]:
        raise ValueError("truncated or checksum mismatch")
    # Cereal's portable binary: an endianness byte, the net's name (size, bytes), the iteration.
    (name_size,) = struct.unpack_from("<Q", payload, 1)
    return struct.unpack_from("<q", payload, 9 + name_size)[0]


class Garbage:
    """What a stranger sends: random bytes, a CAF-like header announcing a huge payload, an HTTP
    request, a connection closed at once, idle connections held open."""

    def __init__(self, rng):
        self.rng = rng
        self.connections = 0
        self.held = []
        self.lock = threading.Lock()

    def send(self, port):
        kind = self.rng.choice(["bytes", "huge-header", "http", "close", "hold"])
        try:
            if kind == "hold":
                socks = []
                for _ in range(self.rng.randint(10, 40)):
                    s = socket.create_connection(("127.0.0.1", port), timeout=2)
                    socks.append(s)
                with self.lock:
                    self.held.append((time.time() + self.rng.uniform(2, 8), socks))
                self.connections += len(socks)
                return kind
            with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                self.connections += 1
                if kind == "bytes":
                    s.sendall(self.rng.randbytes(self.rng.randint(1, 65536)))
                elif kind == "huge-header":
                    header = bytearray(self.rng.randbytes(32))
                    header[0:4] = b"\xff\xff\xff\xff"
                    header[4:8] = struct.pack(">I", 0xFFFFFFF0)
                    s.sendall(bytes(header))
                elif kind == "http":
                    s.sendall(b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n" + self.rng.randbytes(64))
                s.settimeout(0.2)
                try:
                    s.recv(4096)
                except OSError:
                    pass
        except OSError:
            pass  # refused or reset: also an answer
        return kind

    def release(self, everything=False):
        now = time.time()
        with self.lock:
            keep = []
            for deadline, socks in self.held:
                if everything or deadline <= now:
                    for s in socks:
                        s.close()
                else:
                    keep.append((deadline, socks))
            self.held = keep


class Cluster:
    def __init__(self, args, work, name, extra):
        self.args, self.work, self.name = args, work, name
        self.port_file = os.path.join(work, f"{name}.port")
        self.status_file = os.path.join(work, f"{name}.status")
        cmd = [os.path.join(args.build, "apps", "taihu-train")] + common_args(args, work) + [
            f"cluster.port_file={self.port_file}", f"status.port_file={self.status_file}",
            f"--report={os.path.join(work, name + '.json')}"] + extra
        self.log_path = os.path.join(work, f"{name}.log")
        self.coordinator = subprocess.Popen(cmd, stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT)
        for _ in range(300):
            if os.path.exists(self.port_file) and os.path.getsize(self.port_file) > 0:
                break
            time.sleep(0.1)
        self.port = int(open(self.port_file).read())
        self.nodes = {}  # name -> Popen
        self.ended = {}  # name -> exit code
        self.count = 0

    def start_node(self):
        self.count += 1
        name = f"{self.name}-n{self.count}"
        cmd = [os.path.join(self.args.build, "apps", "taihu-node"), f"--coordinator=127.0.0.1:{self.port}",
               f"--secret-file={os.path.join(self.work, 'secret')}", f"--name={name}", "--join-timeout=60",
               "--dead-after=3"]
        self.nodes[name] = subprocess.Popen(cmd, stdout=open(os.path.join(self.work, name + ".log"), "w"),
                                            stderr=subprocess.STDOUT)
        return name

    def reap(self):
        for name, p in list(self.nodes.items()):
            if p.poll() is not None:
                self.ended[name] = p.returncode
                del self.nodes[name]

    def status(self):
        try:
            port = int(open(self.status_file).read())
            return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2))
        except (OSError, ValueError):
            return None

    def report(self):
        return json.load(open(os.path.join(self.work, self.name + ".json")))


def train_args(args, work, out):
    return [f"--config-file={os.path.join(args.src, 'config', 'lenet-fashion-cluster.ini')}",
            f"data.limit_train={args.images}", "data.limit_test=2000", f"output.dir={os.path.join(work, out)}",
            "output.checkpoint_every=20", "--progress=lines"]


def common_args(args, work):
    return train_args(args, work, "out") + [
        f"cluster.secret_file={os.path.join(work, 'secret')}", "cluster.port=0", "cluster.dead_after=3",
        "elastic=true", "sync.step_timeout=60", "status.port=0"]


def run_undisturbed(args, work, name, epochs):
    cluster = Cluster(args, work, name, [f"epochs={epochs}"])
    for _ in range(NODES):
        cluster.start_node()
    t0 = time.time()
    rc = cluster.coordinator.wait()
    for p in cluster.nodes.values():
        p.wait(timeout=60)
    return rc, time.time() - t0, cluster


def verify_checkpoint(args, work, path, epochs):
    """Framing and checksum, then one more iteration resumed from it in one process (given one
    epoch more than the run's `epochs`, so that the run's final checkpoint can go on too)."""
    try:
        iteration = checkpoint_iteration(path)
    except (OSError, ValueError, struct.error) as e:
        return f"{path}: {e}"
    out = subprocess.run([os.path.join(args.build, "apps", "taihu-train")] + train_args(args, work, "verify") + [
        "nodes=0", f"iterations={iteration + 1}", f"epochs={epochs + 1}", f"--resume={path}"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0 or "resumed from" not in out.stdout + out.stderr:
        return f"{path} (iteration {iteration}): exit {out.returncode}: {(out.stdout + out.stderr)[-400:]}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--images", type=int, default=9600, help="training images per epoch")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED", "0")) or None)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    seed = args.seed or random.SystemRandom().randrange(1, 2**31)
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="taihu-soak-")
    with open(os.path.join(work, "secret"), "w") as f:
        f.write(random.SystemRandom().randbytes(32).hex())
    os.chmod(os.path.join(work, "secret"), 0o600)
    log(f"soak: {args.minutes} min, seed {seed}, work {work}")
    failures = []

    # 1. How long an epoch takes, undisturbed: the soak run gets enough epochs to outlast MINUTES.
    rc, _, calibration = run_undisturbed(args, work, "calibrate", 1)
    if rc != 0:
        sys.exit(f"the undisturbed calibration run failed (exit {rc}); see {work}/calibrate.log")
    seconds = calibration.report()["seconds"]  # training only; disturbances slow the soak run down
    epochs = max(2, math.ceil(1.25 * args.minutes * 60 / seconds) + 1)
    log(f"an undisturbed epoch of {args.images} images takes {seconds:.1f} s: {epochs} epochs")

    # 2. The soak run.
    cluster = Cluster(args, work, "soak", [f"epochs={epochs}"])
    for _ in range(NODES):
        cluster.start_node()
    garbage = Garbage(rng)
    counts = {"kills": 0, "stops": 0, "stops past dead_after": 0, "restarts": 0, "garbage connections": 0}
    kinds = {}
    memory = []  # (seconds since start, coordinator RSS MB)

    def sample_memory():  # and every 5 minutes a line, so that a run cut short still leaves them
        memory.append((time.time() - t0, rss_mb(cluster.coordinator.pid)))
        if memory[-1][1] is not None and (len(memory) == 1 or int(memory[-1][0] // 300) != int(memory[-2][0] // 300)):
            log(f"coordinator RSS {memory[-1][1]:.0f} MB after {memory[-1][0]:.0f} s")
    checkpoint = os.path.join(work, "out", "lenet-fashion-cluster.ckpt")
    kept, last_mtime = [], None
    os.makedirs(os.path.join(work, "kept"))
    t0 = time.time()
    deadline = t0 + args.minutes * 60
    stopped = {}  # name -> when to continue it
    while cluster.coordinator.poll() is None and time.time() < deadline:
        time.sleep(rng.uniform(0.5, 2.0))
        cluster.reap()
        garbage.release()
        sample_memory()
        try:
            mtime = os.stat(checkpoint).st_mtime_ns
            if mtime != last_mtime:
                last_mtime = mtime
                copy = os.path.join(work, "kept", f"{len(kept):04d}.ckpt")
                shutil.copyfile(checkpoint, copy)
                kept.append(copy)
        except OSError:
            pass
        for name, when in list(stopped.items()):
            if time.time() >= when:
                if name in cluster.nodes:
                    cluster.nodes[name].send_signal(signal.SIGCONT)
                del stopped[name]
        # Replace nodes that are gone (killed, or dropped after a long stop).
        while len(cluster.nodes) < NODES and cluster.coordinator.poll() is None:
            cluster.start_node()
            counts["restarts"] += 1
        status = cluster.status()
        training = status is not None and status.get("state") == "training" and \
            sum(m["state"] == "training" for m in status.get("members", [])) == NODES
        action = rng.random()
        if action < 0.15 and training and not stopped:
            victim = rng.choice(sorted(cluster.nodes))
            cluster.nodes[victim].kill()
            counts["kills"] += 1
            log(f"killed {victim}")
        elif action < 0.30 and training and not stopped:
            victim = rng.choice(sorted(cluster.nodes))
            pause = rng.uniform(0.5, 6.0)
            cluster.nodes[victim].send_signal(signal.SIGSTOP)
            stopped[victim] = time.time() + pause
            counts["stops"] += 1
            counts["stops past dead_after"] += pause > 3
            log(f"stopped {victim} for {pause:.1f} s")
        else:
            targets = listening_ports(cluster.coordinator.pid)
            for p in cluster.nodes.values():
                targets += listening_ports(p.pid)
            for port in targets:
                kind = garbage.send(port)
                kinds[kind] = kinds.get(kind, 0) + 1
    garbage.release(everything=True)
    counts["garbage connections"] = garbage.connections
    for name in stopped:
        if name in cluster.nodes:
            cluster.nodes[name].send_signal(signal.SIGCONT)
    disturbed = time.time() - t0
    log(f"disturbances over after {disturbed:.0f} s: {counts}; garbage by kind {kinds}")

    # 3. The run must end by itself, on 3 nodes again.
    hang_limit = max(300.0, 4 * seconds * epochs)
    end_by = time.time() + hang_limit
    while cluster.coordinator.poll() is None and time.time() < end_by:
        time.sleep(1)
        cluster.reap()
        sample_memory()
        while len(cluster.nodes) < NODES and cluster.coordinator.poll() is None:
            cluster.start_node()
            counts["restarts"] += 1
    if cluster.coordinator.poll() is None:
        failures.append(f"the coordinator hung: still running {hang_limit:.0f} s after the disturbances ended")
        cluster.coordinator.kill()
    rc = cluster.coordinator.wait()
    run_seconds = time.time() - t0
    if rc != 0:
        failures.append(f"the coordinator exited {rc} (see {cluster.log_path})")
    for name, p in cluster.nodes.items():
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            failures.append(f"node {name} did not end after the run")
    cluster.reap()
    # Killed nodes end by SIGKILL; stopped ones the cluster dropped exit 8; every other exits 0.
    bad_exits = {n: c for n, c in cluster.ended.items() if c not in (0, 8, -signal.SIGKILL)}
    if bad_exits:
        failures.append(f"nodes ended with unexpected codes: {bad_exits}")

    # 4. Memory: the coordinator's resident set after its first 20 s of training against the end.
    samples = [m for t, m in memory if m is not None]
    early = [m for t, m in memory if m is not None and 10 <= t <= 30] or samples[:5]
    start_mb, end_mb, peak_mb = statistics.median(early), statistics.median(samples[-5:]), max(samples)
    if end_mb > start_mb + max(64.0, 0.5 * start_mb):
        failures.append(f"coordinator memory grew from {start_mb:.0f} MB to {end_mb:.0f} MB")

    # 5. Every checkpoint seen: framing on all of them, a resumed iteration on up to 12.
    if os.path.exists(checkpoint):
        final = os.path.join(work, "kept", "final.ckpt")
        shutil.copyfile(checkpoint, final)
        kept.append(final)
    sample = kept if len(kept) <= 12 else [kept[round(i * (len(kept) - 1) / 11)] for i in range(12)]
    for path in kept:
        try:
            checkpoint_iteration(path)
        except (OSError, ValueError, struct.error) as e:
            failures.append(f"checkpoint {path}: {e}")
    for path in sample:
        problem = verify_checkpoint(args, work, path, epochs)
        if problem:
            failures.append(f"checkpoint does not resume: {problem}")

    figures = {"seed": seed, "minutes": args.minutes, "epochs": epochs, "images_per_epoch": args.images,
               **counts, "garbage_by_kind": kinds, "checkpoints_seen": len(kept),
               "checkpoints_resumed": len(sample), "coordinator_rss_mb": {
                   "start": round(start_mb, 1), "end": round(end_mb, 1), "peak": round(peak_mb, 1),
                   "by_second": {int(t // 30) * 30: round(m) for t, m in memory if m is not None}},
               "disturbed_seconds": round(disturbed, 1), "run_seconds": round(run_seconds, 1)}

    def write_figures():
        figures["failures"] = failures
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures, f, indent=2)

    # The soak run's verdicts now, before the long reference run: a run cut short keeps them.
    log(f"soak run: {run_seconds:.0f} s, coordinator RSS {start_mb:.0f} MB early, {end_mb:.0f} MB at the end, "
        f"{peak_mb:.0f} MB peak; {len(kept)} checkpoints whole, {len(sample)} resumed; "
        f"failures so far: {failures or 'none'}")
    figures["reference"] = "running"
    try:
        figures["test_accuracy"] = {"soak": cluster.report()["test_accuracy"]}
    except (OSError, ValueError, KeyError):
        pass
    write_figures()

    # 6. The same run undisturbed (not worth its time when the soak run failed).
    reference, reference_seconds = None, 0.0
    if cluster.coordinator.returncode == 0:
        rc, reference_seconds, reference = run_undisturbed(args, work, "reference", epochs)
        if rc != 0:
            failures.append(f"the undisturbed reference run failed (exit {rc})")
    figures["reference"] = "done" if reference is not None else "not run"
    figures["reference_seconds"] = round(reference_seconds, 1)
    try:
        if reference is None:
            raise ValueError("the soak run failed")
        soak, ref = cluster.report(), reference.report()
        figures["test_accuracy"] = {"soak": soak["test_accuracy"], "undisturbed": ref["test_accuracy"]}
        if abs(soak["test_accuracy"] - ref["test_accuracy"]) > 0.01:
            failures.append(f"accuracy {soak['test_accuracy']:.4f} vs {ref['test_accuracy']:.4f} undisturbed")
    except (OSError, ValueError, KeyError) as e:
        failures.append(f"no report to compare: {e}")
    write_figures()
    print(json.dumps(figures, indent=2))
    if failures:
        log("soak FAILED (work kept in " + work + "):")
        for f in failures:
            log("  " + f)
        sys.exit(1)
    log("soak passed")
    if not os.environ.get("KEEP_WORK"):
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
