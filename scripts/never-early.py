#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Is any delay, pause, TTR or reserve timeout early? (issue 31, item 7)

Starts each server on a free port in a temporary directory, then measures on the wall clock of
this script (time.monotonic_ns) how long each of TRIES timed things took from the moment the
request was sent to the moment its answer arrived. The server's deadline starts after the send
and its answer comes after the deadline, so no measured figure below the asked time may exist:
every "early" count must be 0. Prints, per server and kind: tries, early, min, median, max (ms).

Servers: wheel-jobs (memory), wheel-jobs --store (a fresh redis-server), Debian's beanstalkd
(whole seconds only: its delay is 1 s where ours is DELAY_MS), and wheel-server's DELAY.
Kinds: delay (put with a delay, a waiting reserve gets it), pause (pause-tube, then a reserve
waiting on the tube gets its ready job), timeout (reserve-with-timeout answers TIMED_OUT), ttr
(a reserved job's TTR ends, another waiting reserve gets it). Tries of one kind overlap: each
starts JITTER ms (random, sub-millisecond) after the previous one, so they cover every phase of
the server's millisecond.

  scripts/never-early.py [--tries 100] [--delay-ms 50] [--only wheel-jobs,redis,beanstalkd,wheel-server]
Env: BUILD (build/plain)
"""
import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(os.environ.get("BUILD", "build/plain"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"never-early: {what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"never-early: {what} did not listen on {port}")


class Beanstalk:
    def __init__(self, reader, writer):
        self.r, self.w = reader, writer

    @classmethod
    async def open(cls, port):
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def cmd(self, line, body=None):
        data = line.encode() + b"\r\n"
        if body is not None:
            data += body + b"\r\n"
        self.w.write(data)
        await self.w.drain()
        return await self.reply()

    async def reply(self):
        head = (await self.r.readline()).decode().strip()
        if head.startswith(("RESERVED", "OK ", "FOUND")):
            size = int(head.split()[-1])
            body = await self.r.readexactly(size + 2)
            return head, body[:-2]
        return head, None

    def close(self):
        self.w.close()


def secs(ms):
    # Whole seconds as beanstalkd writes them; our decimal extension otherwise.
    return str(ms // 1000) if ms % 1000 == 0 else f"{ms // 1000}.{ms % 1000:03d}"


async def staggered(tries, jitter_ms, one):
    async def later(i):
        await asyncio.sleep(i * jitter_ms / 1000 + random.random() / 1000)
        return await one(i)

    return await asyncio.gather(*(later(i) for i in range(tries)))


async def kind_delay(port, tries, delay_ms):
    # One tube per try: a waiting reserve there, then a put with the delay.
    async def one(i):
        tube = f"d{i}-{random.randrange(1 << 30)}"
        worker, producer = await Beanstalk.open(port), await Beanstalk.open(port)
        await worker.cmd(f"watch {tube}")
        await producer.cmd(f"use {tube}")
        worker.w.write(b"reserve\r\n")
        await worker.w.drain()
        await asyncio.sleep(0.005)  # the reserve waits
        start = time.monotonic_ns()
        await producer.cmd(f"put 0 {secs(delay_ms)} 60 1", b"x")
        head, _ = await worker.reply()
        took = time.monotonic_ns() - start
        assert head.startswith("RESERVED"), head
        worker.close(), producer.close()
        return took

    return await staggered(tries, 7.3, one)


async def kind_pause(port, tries, delay_ms):
    async def one(i):
        tube = f"p{i}-{random.randrange(1 << 30)}"
        worker, producer = await Beanstalk.open(port), await Beanstalk.open(port)
        await producer.cmd(f"use {tube}")
        await producer.cmd("put 0 0 60 1", b"x")
        await worker.cmd(f"watch {tube}")
        await worker.cmd("ignore default")
        start = time.monotonic_ns()
        head, _ = await producer.cmd(f"pause-tube {tube} {secs(delay_ms)}")
        assert head == "PAUSED", head
        head, _ = await worker.cmd("reserve")
        took = time.monotonic_ns() - start
        assert head.startswith("RESERVED"), head
        worker.close(), producer.close()
        return took

    return await staggered(tries, 7.3, one)


async def kind_timeout(port, tries, delay_ms):
    async def one(i):
        worker = await Beanstalk.open(port)
        await worker.cmd(f"watch t{i}-{random.randrange(1 << 30)}")
        await worker.cmd("ignore default")
        start = time.monotonic_ns()
        head, _ = await worker.cmd(f"reserve-with-timeout {secs(delay_ms)}")
        took = time.monotonic_ns() - start
        assert head == "TIMED_OUT", head
        worker.close()
        return took

    return await staggered(tries, 7.3, one)


async def kind_ttr(port, tries, delay_ms):
    # TTR of at least a second (beanstalkd's floor); the other waiting reserve gets the job back.
    ttr_ms = max(delay_ms, 1000)

    async def one(i):
        tube = f"x{i}-{random.randrange(1 << 30)}"
        a, b = await Beanstalk.open(port), await Beanstalk.open(port)
        for c in (a, b):
            await c.cmd(f"use {tube}")
            await c.cmd(f"watch {tube}")
            await c.cmd("ignore default")
        await a.cmd(f"put 0 0 {secs(ttr_ms)} 1", b"x")
        start = time.monotonic_ns()
        head, _ = await a.cmd("reserve")
        assert head.startswith("RESERVED"), head
        head, _ = await b.cmd("reserve")
        took = time.monotonic_ns() - start
        assert head.startswith("RESERVED"), head
        a.close(), b.close()
        return took

    return await staggered(tries, 7.3, one), ttr_ms


async def kind_server_delay(port, tries, delay_ms):
    async def one(i):
        r, w = await asyncio.open_connection("127.0.0.1", port)
        start = time.monotonic_ns()
        w.write(f"DELAY {delay_ms} t{i}\n".encode())
        await w.drain()
        while True:
            line = (await r.readline()).decode().strip()
            if line.startswith("DELAYED"):
                break
        took = time.monotonic_ns() - start
        w.close()
        return took

    return await staggered(tries, 7.3, one)


def row(server, kind, asked_ms, took_ns):
    ms = [t / 1e6 for t in took_ns]
    early = sum(1 for t in took_ns if t < asked_ms * 1_000_000)
    print(f"| {server} | {kind} | {asked_ms} | {len(ms)} | {early} | {min(ms):.3f} | "
          f"{statistics.median(ms):.3f} | {max(ms):.3f} |", flush=True)
    return early


async def measure_beanstalk(server, port, tries, delay_ms):
    early = 0
    early += row(server, "delay", delay_ms, await kind_delay(port, tries, delay_ms))
    early += row(server, "pause-tube", delay_ms, await kind_pause(port, tries, delay_ms))
    early += row(server, "reserve-with-timeout", delay_ms,
                 await kind_timeout(port, tries, delay_ms))
    took, ttr_ms = await kind_ttr(port, tries, delay_ms)
    early += row(server, "ttr", ttr_ms, took)
    return early


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tries", type=int, default=100)
    p.add_argument("--delay-ms", type=int, default=50)
    p.add_argument("--only", default="wheel-jobs,redis,beanstalkd,wheel-server")
    a = p.parse_args()
    which = a.only.split(",")
    work = tempfile.mkdtemp(prefix="never-early-")
    procs = []

    def start(argv, port, what):
        proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(work, what + ".log"), "w"))
        procs.append(proc)
        wait_port(port, proc, what)
        return proc

    jobs = os.path.join(BUILD, "apps/wheel-jobs/wheel-jobs")
    early = 0
    print(f"never-early: {a.tries} tries per kind, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load {open('/proc/loadavg').read().split()[0]}")
    print("| server | kind | asked ms | tries | early | min ms | median ms | max ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    try:
        if "wheel-jobs" in which:
            port = free_port()
            start([jobs, "--port", str(port), "--log-level", "warn"], port, "wheel-jobs")
            early += asyncio.run(measure_beanstalk("wheel-jobs", port, a.tries, a.delay_ms))
        if "redis" in which:
            rport, port = free_port(), free_port()
            start(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no",
                   "--dir", work], rport, "redis-server")
            start([jobs, "--port", str(port), "--store", f"redis://127.0.0.1:{rport}",
                   "--log-level", "warn"], port, "wheel-jobs-store")
            early += asyncio.run(measure_beanstalk("wheel-jobs --store", port, a.tries, a.delay_ms))
        if "beanstalkd" in which and shutil.which("beanstalkd"):
            port = free_port()
            start(["beanstalkd", "-l", "127.0.0.1", "-p", str(port)], port, "beanstalkd")
            early += asyncio.run(measure_beanstalk("beanstalkd", port, a.tries, 1000))
        if "wheel-server" in which:
            port = free_port()
            start([os.path.join(BUILD, "apps/wheel-server/wheel-server"), "--port", str(port),
                   "--log-level", "warn", "--stats-interval", "0"], port, "wheel-server")
            early += row("wheel-server", "DELAY", a.delay_ms,
                         asyncio.run(kind_server_delay(port, a.tries, a.delay_ms)))
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    print(f"never-early: {early} early in all")
    return 1 if early else 0


if __name__ == "__main__":
    sys.exit(main())
