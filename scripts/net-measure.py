#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Measures wheel-server on loopback: user-space bytes per idle connection and idle-close
lateness. Starts the server itself.

  scripts/net-measure.py memory   [--server build/plain/apps/wheel-server/wheel-server] [--n 10000]
  scripts/net-measure.py lateness [--server ...] [--n 1000] [--idle-ms 1000] [--tick 100ms]

memory:   RSS of the server (VmRSS) after one warm-up connection, then with N idle connections
          open; prints (delta / N) bytes. The kernel's socket memory is not in RSS.
lateness: N clients each send one PING at a random moment, then stay silent; lateness is the
          time from that send to "BYE idle", minus the reader-idle delay. Prints p50/p99/max.
"""
import argparse
import asyncio
import json
import os
import random
import resource
import socket
import subprocess
import sys
import time


def start_server(binary, extra):
    cmd = [binary, "--port", "0", "--stats-interval", "0", "--log-level", "warn"] + extra
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening on "):
        sys.exit(f"no listening line: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def stats(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"STATS\n")
        data = b""
        while not data.endswith(b"\n"):
            data += s.recv(4096)
    return json.loads(data.decode()[6:])


def memory(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    proc, port = start_server(args.server, ["--reader-idle", "10m", "--max-connections",
                                            str(args.n + 100)] + args.extra)
    try:
        warm = socket.create_connection(("127.0.0.1", port))
        warm.sendall(b"PING\n")
        warm.recv(16)
        warm.close()
        stats(port)
        time.sleep(0.3)
        before = rss_bytes(proc.pid)
        conns = []
        for _ in range(args.n):
            conns.append(socket.create_connection(("127.0.0.1", port)))
        while stats(port)["connections"] < args.n + 1:
            time.sleep(0.05)
        time.sleep(0.5)  # the wheel's worker has moved every timeout into its bucket
        after = rss_bytes(proc.pid)
        print(json.dumps({"connections": args.n, "rss_before": before, "rss_after": after,
                          "bytes_per_idle_connection": round((after - before) / args.n, 1)}))
        for c in conns:
            c.close()
    finally:
        proc.terminate()
        proc.wait(5)


async def one_client(port, idle_s, results):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await asyncio.sleep(random.uniform(0.0, 0.8 * idle_s))  # spread, but before the first close
    writer.write(b"PING\n")
    await writer.drain()
    sent = time.monotonic()
    if (await reader.readline()) != b"PONG\n":
        writer.close()
        return
    line = await reader.readline()
    closed = time.monotonic()
    if line == b"BYE idle\n":
        results.append((closed - sent - idle_s) * 1000.0)
    writer.close()


async def lateness_async(port, args):
    results = []
    await asyncio.gather(*(one_client(port, args.idle_ms / 1000.0, results) for _ in range(args.n)))
    return results


def lateness(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    proc, port = start_server(args.server, ["--reader-idle", f"{args.idle_ms}ms", "--tick",
                                            args.tick] + args.extra)
    try:
        results = sorted(asyncio.run(lateness_async(port, args)))
    finally:
        proc.terminate()
        proc.wait(5)
    pct = lambda p: results[min(len(results) - 1, int(p / 100.0 * len(results)))]
    print(json.dumps({"clients": args.n, "closed": len(results), "idle_ms": args.idle_ms,
                      "tick": args.tick, "lateness_ms_min": round(results[0], 2),
                      "lateness_ms_p50": round(pct(50), 2), "lateness_ms_p99": round(pct(99), 2),
                      "lateness_ms_max": round(results[-1], 2)}))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["memory", "lateness"])
    parser.add_argument("--server", default=os.path.join(root, "build/plain/apps/wheel-server/wheel-server"))
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--idle-ms", type=int, default=1000)
    parser.add_argument("--tick", default="100ms")
    parser.add_argument("extra", nargs="*", help="more wheel-server flags, after --")
    args = parser.parse_args()
    if args.what == "memory":
        args.n = args.n or 10000
        memory(args)
    else:
        args.n = args.n or 1000
        lateness(args)


if __name__ == "__main__":
    main()
