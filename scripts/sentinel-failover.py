#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How long a wheel-jobs fleet on Redis Sentinel is down when its primary dies, and what it loses.

Each run starts, on free loopback ports in a temporary directory: a redis-server primary (AOF,
appendfsync always), REPLICAS replicas of it, three redis-sentinel (quorum 2, down-after
DOWN_AFTER_MS) and two wheel-jobs nodes on redis-sentinel://. Node A takes puts at RATE a second
(one connection, paced, delays 0), node B reserves and deletes them (one connection). After
WARMUP seconds the primary is SIGKILLed; the load goes on for AFTER seconds; then the jobs left
are drained through node B. This script subscribes to +switch-master on a sentinel to learn when
Sentinel promoted a replica.

Per run: promotion (kill -> +switch-master), puts again (the first put sent after the kill that
was acknowledged, measured from the promotion: the target is at most 2 s) and reserves again
(the same for node B), puts answered INTERNAL_ERROR, and the losses: acknowledged puts that
were never drained nor deleted (lost), acknowledged deletes whose job was drained or delivered
again (back), deliveries after the delete was acknowledged (late). Jobs are told apart by id and
body (ids can be given out twice after a lossy failover). Prints one line per run and the
medians per setting; exits 1 if a run with --store-replicas 1 lost anything.

  scripts/sentinel-failover.py [--runs 3] [--settings 0,1] [--rate 200] [--replicas 2]
                               [--warmup 4] [--after 6] [--down-after-ms 1000] [--seed 32]
                               [--restart-old]
Env: BUILD (build/plain: its apps/wheel-jobs/wheel-jobs), KEEP (1: keep each run's directory,
     with every process's log)
"""
import argparse
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.path.abspath(os.environ.get("BUILD", "build/plain"))
WHEEL_JOBS = os.path.join(BUILD, "apps/wheel-jobs/wheel-jobs")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def redis_ask(port, *args, timeout=2.0):
    """One command on a fresh connection; the raw reply's first line (enough for PING/ROLE/INFO
    presence checks), or '' when it cannot connect."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(resp(*args))
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"$"):  # a bulk string: read its body too
                n = int(data.split(b"\r\n", 1)[0][1:])
                while n >= 0 and len(data) < len(data.split(b"\r\n", 1)[0]) + 2 + n + 2:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            return data.decode(errors="replace")
    except OSError:
        return ""


def wait_until(what, check, bound=30.0):
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    sys.exit(f"sentinel-failover: {what} not within {bound:.0f} s")


class Beanstalk:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                return ""
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode()

    def ask(self, text):
        self.s.sendall(text.encode())
        return self.line()


class Cluster:
    """A primary, its replicas, three sentinels and two nodes, in a temporary directory."""

    def __init__(self, args, store_replicas):
        self.dir = tempfile.mkdtemp(prefix="wheel-sentinel-failover-")
        self.procs = []
        self.primary = self.redis("primary", [])
        # The primary sends its first full copy at once, not after the default 5 s pause.
        redis_ask(self.primary, "CONFIG", "SET", "repl-diskless-sync-delay", "0")
        self.replicas = [self.redis(f"replica{i}", ["--replicaof", "127.0.0.1", str(self.primary)])
                         for i in range(args.replicas)]
        self.sentinels = [self.sentinel(i, args.down_after_ms) for i in range(3)]
        wait_until("the replicas' first sync", lambda: all(
            "master_link_status:up" in redis_ask(p, "INFO", "replication") for p in self.replicas))
        wait_until("the sentinels seeing each other and the replicas", self.sentinels_ready)
        url = "redis-sentinel://" + ",".join(f"127.0.0.1:{p}" for p in self.sentinels) + "#wheel"
        extra = ["--store-replicas", str(store_replicas)] if store_replicas else []
        self.a = self.node("a", url, extra)
        self.b = self.node("b", url, extra)

    def spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        self.procs.append(p)
        return p

    def redis(self, name, extra, port=None):
        port = port or free_port()
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        self.spawn(name, ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                          "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                          "--logfile", os.path.join(d, "redis.log")] + extra)
        wait_until(f"{name} answering PING", lambda: "PONG" in redis_ask(port, "PING"))
        return port

    def sentinel(self, i, down_after_ms):
        port = free_port()
        conf = os.path.join(self.dir, f"sentinel{i}.conf")
        with open(conf, "w") as f:
            f.write(f"port {port}\nbind 127.0.0.1\ndir {self.dir}\n"
                    f"logfile {self.dir}/sentinel{i}.log\n"
                    f"sentinel monitor wheel 127.0.0.1 {self.primary} 2\n"
                    f"sentinel down-after-milliseconds wheel {down_after_ms}\n"
                    f"sentinel failover-timeout wheel 10000\nsentinel parallel-syncs wheel 1\n")
        self.spawn(f"sentinel{i}", ["redis-sentinel", conf])
        wait_until(f"sentinel {i} answering PING", lambda: "PONG" in redis_ask(port, "PING"))
        return port

    def sentinels_ready(self):
        for p in self.sentinels:
            info = redis_ask_all(p, "SENTINEL", "master", "wheel")
            fields = dict(zip(info[::2], info[1::2]))
            if int(fields.get("num-slaves", 0)) < len(self.replicas) or \
               int(fields.get("num-other-sentinels", 0)) < 2:
                return False
        return True

    def node(self, name, url, extra):
        p = self.spawn("node-" + name, [WHEEL_JOBS, "--store", url, "--port", "0",
                                        "--log-level", "warn"] + extra)
        line = p.stdout.readline()
        if not line.startswith("listening on "):
            sys.exit(f"sentinel-failover: node {name} did not start (see {self.dir})")
        return int(line.rsplit(":", 1)[1])

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        if os.environ.get("KEEP"):
            print(f"sentinel-failover: kept {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def redis_ask_all(port, *args):
    """A flat array reply of bulk strings, as a list of str ([] on failure)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(resp(*args))
            f = s.makefile("rb")
            head = f.readline()
            if not head.startswith(b"*"):
                return []
            out = []
            for _ in range(int(head[1:])):
                n = int(f.readline()[1:])
                out.append(f.read(n + 2)[:-2].decode())
            return out
    except (OSError, ValueError):
        return []


def watch_switch(port, stop, seen):
    """Records the monotonic time of the first +switch-master seen on sentinel `port` (one
    thread per sentinel: the leader announces first, the others when they learn it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
        s.sendall(resp("SUBSCRIBE", "+switch-master"))
        while not stop.is_set():
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return
            if b"wheel " in data:
                seen.setdefault("switch", time.monotonic())


def run_once(args, store_replicas, seed):
    c = Cluster(args, store_replicas)
    try:
        rng = random.Random(seed)
        stop = threading.Event()
        seen = {}
        acked, puts_failed = set(), [0]
        deliveries, deleted = [], {}  # (t, job); job -> t of DELETED
        maybe_deleted = set()  # the delete's reply was not DELETED: its outcome is unknown
        first_put_after, first_take_after = [None], [None]
        killed = [None]

        def producer():
            client = Beanstalk(c.a)
            period = 1.0 / args.rate
            next_at = time.monotonic()
            n = 0
            while not stop.is_set():
                next_at += period
                body = f"j{n}-{rng.randrange(1 << 30)}"
                n += 1
                sent = time.monotonic()
                # TTR 2 s: a claim applied but answered INTERNAL_ERROR (its lease unknown to the
                # node, so not given back when the worker leaves) is ready again for the drain.
                reply = client.ask(f"put 0 0 2 {len(body)}\r\n{body}\r\n")
                if reply.startswith("INSERTED "):
                    acked.add((int(reply[9:]), body))
                    if killed[0] is not None and sent > killed[0] and first_put_after[0] is None:
                        first_put_after[0] = time.monotonic()
                else:
                    puts_failed[0] += 1
                time.sleep(max(0.0, next_at - time.monotonic()))

        def worker():
            client = Beanstalk(c.b)
            while not stop.is_set():
                sent = time.monotonic()
                reply = client.ask("reserve-with-timeout 1\r\n")
                if not reply.startswith("RESERVED "):
                    if reply == "INTERNAL_ERROR":
                        time.sleep(0.005)
                    continue
                job = (int(reply.split()[1]), client.line())
                deliveries.append((time.monotonic(), job))
                if killed[0] is not None and sent > killed[0] and first_take_after[0] is None:
                    first_take_after[0] = time.monotonic()
                if client.ask(f"delete {job[0]}\r\n") == "DELETED":
                    deleted[job] = time.monotonic()
                else:
                    maybe_deleted.add(job)

        threads = [threading.Thread(target=producer), threading.Thread(target=worker)] + [
            threading.Thread(target=watch_switch, args=(p, stop, seen)) for p in c.sentinels]
        for t in threads:
            t.start()
        time.sleep(args.warmup)
        killed[0] = time.monotonic()
        os.kill(c.procs[0].pid, signal.SIGKILL)
        if args.restart_old:
            # Back on its port and AOF once Sentinel promoted another: it is made a replica.
            wait_until("the promotion", lambda: "switch" in seen)
            c.redis("primary", [], port=c.primary)
        time.sleep(max(0.0, killed[0] + args.after - time.monotonic()))
        stop.set()
        for t in threads:
            t.join()
        # The jobs left: reserved and deleted until none is ready for 4 s (twice the TTR). A
        # reserve is a change: it answers INTERNAL_ERROR while the store cannot replicate it
        # (--store-replicas), so the drain waits for that, at most 30 s; past it the losses
        # are unknown ("?").
        left, drained = set(), False
        client = Beanstalk(c.b)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            reply = client.ask("reserve-with-timeout 4\r\n")
            if reply == "TIMED_OUT":
                drained = True
                break
            if not reply.startswith("RESERVED "):
                time.sleep(0.1)
                continue
            job = (int(reply.split()[1]), client.line())
            left.add(job)
            client.ask(f"delete {job[0]}\r\n")
        lost = [j for j in acked if j not in left and j not in deleted and j not in maybe_deleted]
        back = [j for j in deleted if j in left]
        late = [j for t, j in deliveries if j in deleted and t > deleted[j]]
        switch = seen.get("switch")
        return {
            "promotion": switch - killed[0] if switch else None,
            "puts_again": first_put_after[0] - switch if switch and first_put_after[0] else None,
            "reserves_again":
                first_take_after[0] - switch if switch and first_take_after[0] else None,
            "acked": len(acked), "failed": puts_failed[0],
            "lost": len(lost) if drained else None, "back": len(back) if drained else None,
            "late": len(late),
        }
    finally:
        c.close()


def fmt(v):
    return "?" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--settings", default="0,1", help="--store-replicas values to run")
    p.add_argument("--rate", type=int, default=200, help="puts a second through node A")
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--warmup", type=float, default=4)
    p.add_argument("--after", type=float, default=6)
    p.add_argument("--down-after-ms", type=int, default=1000)
    p.add_argument("--seed", type=int, default=32)
    p.add_argument("--restart-old", action="store_true",
                   help="restart the killed primary once another is promoted (with one replica, "
                        "--store-replicas 1 needs it back to acknowledge again)")
    args = p.parse_args()
    if not os.access(WHEEL_JOBS, os.X_OK):
        sys.exit(f"sentinel-failover: no {WHEEL_JOBS} (build wheel-jobs, or set BUILD)")
    for tool in ("redis-server", "redis-sentinel"):
        if shutil.which(tool) is None:
            sys.exit(f"sentinel-failover: {tool} not found (scripts/install-deps.sh)")
    cols = ["promotion", "puts_again", "reserves_again", "acked", "failed", "lost", "back", "late"]
    print("store-replicas run " + " ".join(cols) + "   (seconds; promotion from the kill, the "
          "others from the promotion)")
    bad = False
    for setting in [int(s) for s in args.settings.split(",")]:
        rows = []
        for run in range(args.runs):
            r = run_once(args, setting, args.seed + run)
            rows.append(r)
            print(f"{setting} {run + 1} " + " ".join(fmt(r[k]) for k in cols), flush=True)
            if setting >= 1 and (r["lost"] is None or r["lost"] or r["back"] or r["late"]):
                bad = True
        med = {k: statistics.median([r[k] for r in rows if r[k] is not None] or [0]) for k in cols}
        print(f"{setting} median " + " ".join(fmt(med[k]) for k in cols), flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
