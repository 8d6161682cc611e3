#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reply amplification: what one client that pipelines read-only commands and reads nothing
makes a beanstalkd-protocol server hold (issue 36, item 2).

usage: amplification-rss.py [--wheel-jobs PATH] [--beanstalkd PATH] [--redis-server PATH]
                            [--servers local,store,beanstalkd] [--cases peek,big,tubes]
                            [--window S] [--cap-mb MB]

Servers: local (wheel-jobs, memory only), store (wheel-jobs --store on a redis-server of its
own), beanstalkd. Cases, each on a fresh server:
  peek   one 65,535-byte job; 8,192 "peek <id>" in one write (64 KiB)
  big    --max-job-size 1048576 (beanstalkd -z); one 1 MiB job; 8 KiB of peeks (1,024)
  tubes  10,000 tubes of 200-character names (a 1-byte job each); one 64 KiB write of
         list-tubes (5,461)
The greedy client never reads. For `window` seconds a probe client asks list-tube-used in a loop;
the table gives the server's RSS before the write, its peak RSS (VmHWM) by the end of the window,
the probe's slowest answer, and whether the greedy connection was still open. A server whose RSS
passes --cap-mb is killed (shown as "> CAP (killed)"), so that the unbounded runs cannot take
the machine.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def connect(port, deadline=10.0):
    end = time.time() + deadline
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.05)


class Conn:
    def __init__(self, port):
        self.s = connect(port)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("server closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def body(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("server closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def ask(self, request):
        self.s.sendall(request.encode() if isinstance(request, str) else request)
        return self.line()


def start_server(kind, args, max_job_size, tmp):
    port = free_port()
    extra = None
    if kind == "beanstalkd":
        cmd = [args.beanstalkd, "-l", "127.0.0.1", "-p", str(port), "-z", str(max_job_size)]
    else:
        cmd = [args.wheel_jobs, "--port", str(port), "--max-job-size", str(max_job_size),
               "--log-level", "error"]
        if kind == "store":
            rport = free_port()
            rdir = tempfile.mkdtemp(dir=tmp)
            extra = subprocess.Popen(
                [args.redis_server, "--port", str(rport), "--bind", "127.0.0.1", "--dir", rdir,
                 "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            connect(rport).close()
            cmd += ["--store", f"redis://127.0.0.1:{rport}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    connect(port).close()
    return proc, extra, port


def setup(case, port):
    """Fills the server for `case`; returns the greedy client's one write."""
    c = Conn(port)
    if case in ("peek", "big"):
        size = 65535 if case == "peek" else 1 << 20
        reply = c.ask(b"put 0 0 600 %d\r\n" % size + b"j" * size + b"\r\n")
        assert reply.startswith("INSERTED "), reply
        jid = reply.split()[1]
        one = f"peek {jid}\r\n".encode()
        total = 65536 if case == "peek" else 8192
        return one * (total // len(one)), c
    # tubes: a 1-byte job in each of 10,000 tubes, pipelined in batches of 500
    names = [("t%d" % i).ljust(200, "n") for i in range(10000)]
    for start in range(0, len(names), 500):
        batch = "".join(f"use {n}\r\nput 0 0 600 1\r\nx\r\n" for n in names[start:start + 500])
        c.s.sendall(batch.encode())
        for _ in range(1000):
            c.line()
    one = b"list-tubes\r\n"
    return one * (65536 // len(one)), c


def run_case(kind, case, args, tmp):
    max_job_size = 1 << 20 if case == "big" else 65535
    proc, extra, port = start_server(kind, args, max_job_size, tmp)
    result = {}
    try:
        payload, keep = setup(case, port)
        time.sleep(0.3)
        result["rss_before_mb"] = status_kb(proc.pid, "VmRSS") / 1024
        greedy = socket.socket()
        greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: it counts
        greedy.connect(("127.0.0.1", port))
        probe = Conn(port)
        stop = threading.Event()
        slowest = [0.0]
        killed = [False]

        def probing():
            while not stop.is_set():
                t = time.time()
                try:
                    probe.ask("list-tube-used\r\n")
                except (OSError, EOFError):
                    return
                slowest[0] = max(slowest[0], time.time() - t)
                time.sleep(0.01)

        def watching():  # the cap: kill before the machine runs out
            while not stop.is_set():
                rss = status_kb(proc.pid, "VmRSS")
                if rss is not None and rss > args.cap_mb * 1024:
                    killed[0] = True
                    proc.send_signal(signal.SIGKILL)
                    return
                time.sleep(0.02)

        threads = [threading.Thread(target=probing), threading.Thread(target=watching)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        greedy.sendall(payload)
        time.sleep(args.window)
        hwm = status_kb(proc.pid, "VmHWM")
        stop.set()
        for t in threads:
            t.join(timeout=60)
        err = greedy.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        result["peak_mb"] = None if killed[0] else (hwm or 0) / 1024
        result["probe_max_ms"] = slowest[0] * 1000
        result["greedy"] = "killed" if killed[0] else ("reset" if err else "open")
        greedy.close()
        keep.s.close()
    finally:
        for p in (proc, extra):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel-jobs", default="build/plain/apps/wheel-jobs/wheel-jobs")
    ap.add_argument("--beanstalkd", default=shutil.which("beanstalkd") or "beanstalkd")
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--servers", default="local,store,beanstalkd")
    ap.add_argument("--cases", default="peek,big,tubes")
    ap.add_argument("--window", type=float, default=3.0, help="seconds after the write")
    ap.add_argument("--cap-mb", type=int, default=4096, help="kill a server past this RSS")
    args = ap.parse_args()
    labels = {"local": "wheel-jobs", "store": "wheel-jobs --store", "beanstalkd": "beanstalkd"}
    print("| case | server | RSS before (MB) | peak RSS (MB) | probe's slowest reply (ms) "
          "| greedy connection |")
    print("|---|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            for kind in args.servers.split(","):
                r = run_case(kind, case, args, tmp)
                peak = f"> {args.cap_mb} (killed)" if r["peak_mb"] is None else f"{r['peak_mb']:.1f}"
                print(f"| {case} | {labels[kind]} | {r['rss_before_mb']:.1f} | {peak} "
                      f"| {r['probe_max_ms']:.0f} | {r['greedy']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
