#!/usr/bin/env python3
"""The test bed's remote shell: runs commands on its hosts for clients on any host.

   usage: exec_server.py TESTBED_SH SOCKET   (started by testbed.sh's tb_up, in the machine's namespaces)

A process on one host cannot enter another host's PID namespace (Linux lets a process join only
its own PID namespace's descendants), so an rsh agent on h1 (mpirun's) asks this server, which runs
in the machine's namespaces, as ssh asks sshd. The client (tb-rsh) sends its standard input,
output and error as descriptors (SCM_RIGHTS) with one JSON request {host, line, cwd, env}; the
server runs `sh -c LINE` on HOST with them and answers the exit status. A client that goes away
before the command ends takes the command with it (SIGTERM, then SIGKILL), as a closed ssh
connection hangs up its remote shell.
"""
import array
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading


def serve(connection, testbed):
    with connection:
        fds = array.array("i")
        message, ancillary, _, _ = connection.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if len(fds) != 3:
            connection.sendall(struct.pack("!i", 255))
            return
        request = json.loads(message)
        try:
            child = subprocess.Popen(
                ["bash", "-c", 'source "$1" && _tb_attach && tb_exec "$2" sh -c "$3"', "tb-exec", testbed,
                 request["host"], request["line"]],
                stdin=fds[0], stdout=fds[1], stderr=fds[2], cwd=request.get("cwd") or "/",
                env=request.get("env") or None, start_new_session=True)
        finally:
            for fd in fds:
                os.close(fd)
        # Wait for the command, or for the client to hang up (EOF on the connection).
        watcher = selectors.DefaultSelector()
        watcher.register(connection, selectors.EVENT_READ)
        while child.poll() is None:
            if watcher.select(timeout=0.2) and not connection.recv(1):
                for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, None)):
                    try:
                        os.killpg(child.pid, sig)
                        child.wait(timeout=grace)
                        break
                    except (ProcessLookupError, subprocess.TimeoutExpired):
                        continue
                return
        status = child.returncode if child.returncode >= 0 else 128 - child.returncode
        try:
            connection.sendall(struct.pack("!i", status))
        except OSError:
            pass


def main():
    testbed, path = sys.argv[1:3]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):
        os.unlink(path)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        connection, _ = server.accept()
        threading.Thread(target=serve, args=(connection, testbed), daemon=True).start()


if __name__ == "__main__":
    main()
