#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Deletes give puts their room back on a full disk (issue 36 item 5), on a real tmpfs.

Needs root. For each SIZE and ORDER: mounts a tmpfs of that size, starts wheel-jobs --dir on it
(default options: 8 MiB segments, 1 MiB reserve, --fsync always), puts jobs of BODY bytes until
the server answers OUT_OF_MEMORY, then deletes them in ORDER (random, seeded, or oldest first)
in chunks of STEP % of the jobs. After each chunk it tries one put, again every 0.1 s for up to
WAIT s (the log looks for space once a second), and reports the share of the jobs deleted when
a put was accepted again ("never" when every job was deleted first, "stuck" when deletes were
refused). One line per run, with the file system's use (kB) when full and when puts resumed.

  scripts/disk-full-deletes.py --wheel-jobs build/plain/apps/wheel-jobs/wheel-jobs \\
      [--size 200m --size 20m] [--order random --order oldest] [--body 4096] [--step 1]
      [--wait 1.5] [--seed 1] [--expect-below PCT]

--expect-below PCT: exit 1 unless every run resumed after deleting less than PCT % of the jobs
(the CI slice, tests/CMakeLists.txt: DiskFullDeletes.TmpfsPutsResume). Exit 77 when not root or
the tmpfs cannot be mounted (ctest counts it skipped).
"""
import argparse
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Client:
    def __init__(self, port):
        deadline = time.time() + 10
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("wheel-jobs closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(commands))
        return [self.line() for _ in commands]


def put_command(body):
    return b"put 0 0 60 %d\r\n%s\r\n" % (len(body), body)


def used_kb(path):
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bfree) * st.f_frsize // 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, size, order):
    mnt = tempfile.mkdtemp(prefix="wheel-disk-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt]).returncode:
        os.rmdir(mnt)
        print("cannot mount a tmpfs: skipped")
        sys.exit(77)
    port = free_port()
    server = subprocess.Popen([args.wheel_jobs, "--port", str(port), "--dir", mnt + "/log",
                               "--log-level", "warn"])
    try:
        c = Client(port)
        body = b"x" * args.body
        ids = []
        full = False
        while not full:
            for reply in c.pipeline([put_command(body)] * 64):
                if reply.startswith("INSERTED "):
                    ids.append(int(reply.split()[1]))
                elif reply == "OUT_OF_MEMORY":
                    full = True
                else:
                    raise RuntimeError("put: " + reply)
        full_kb = used_kb(mnt)
        if order == "random":
            random.Random(args.seed).shuffle(ids)
        chunk = max(1, round(len(ids) * args.step / 100))
        deleted = 0
        result = "never"
        resumed_kb = None
        while deleted < len(ids):
            replies = c.pipeline([b"delete %d\r\n" % i for i in ids[deleted:deleted + chunk]])
            deleted += sum(r == "DELETED" for r in replies)
            if any(r != "DELETED" for r in replies):
                result = "stuck (a delete answered %s at %.1f %%)" % (
                    next(r for r in replies if r != "DELETED"), 100.0 * deleted / len(ids))
                break
            deadline = time.time() + args.wait
            while True:
                reply = c.pipeline([put_command(body)])[0]
                if reply.startswith("INSERTED "):
                    result = "%.1f %%" % (100.0 * deleted / len(ids))
                    resumed_kb = used_kb(mnt)
                    break
                if reply != "OUT_OF_MEMORY":
                    raise RuntimeError("put: " + reply)
                if time.time() > deadline:
                    break
                time.sleep(0.1)
            if resumed_kb is not None:
                break
        print("size=%s order=%s body=%d jobs=%d full_kb=%d puts_resumed_after=%s%s" % (
            size, order, args.body, len(ids), full_kb, result,
            "" if resumed_kb is None else " (%d deleted, %d kB used)" % (deleted, resumed_kb)),
            flush=True)
        return 100.0 * deleted / len(ids) if resumed_kb is not None else None
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheel-jobs", required=True)
    p.add_argument("--size", action="append")
    p.add_argument("--order", action="append", choices=["random", "oldest"])
    p.add_argument("--body", type=int, default=4096)
    p.add_argument("--step", type=float, default=1.0)
    p.add_argument("--wait", type=float, default=1.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--expect-below", type=float)
    args = p.parse_args()
    if not 1 <= args.body <= 65535 or not 0 < args.step <= 100 or not 0 <= args.wait <= 60:
        p.error("--body 1..65535, --step 0..100, --wait 0..60")
    if os.geteuid() != 0:
        print("needs root (mount -t tmpfs): skipped")
        sys.exit(77)
    ok = True
    for size in args.size or ["200m", "20m"]:
        for order in args.order or ["random", "oldest"]:
            share = run(args, size, order)
            if args.expect_below is not None and (share is None or share >= args.expect_below):
                print("FAIL: puts did not resume before %.0f %% of the jobs were deleted" %
                      args.expect_below)
                ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
